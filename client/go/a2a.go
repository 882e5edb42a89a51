package odyssey

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"iter"

	a2av1 "github.com/odyssey-ai/odyssey/client/go/gen/lf/a2a/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// SequenceKey is the metadata key of every streamed A2A update that holds the session's
// sequence number of the event it comes from (the card's
// urn:odyssey:a2a:event-sequence:v1 extension).
const SequenceKey = "odysseySequence"

// DetailsExtension is the extension of extended cards that holds an agent's details
// (model, tools, permission rules, sandbox).
const DetailsExtension = "urn:odyssey:a2a:agent-details:v1"

// A2A is the server's agents over the Agent2Agent protocol (A2A v1.0, gRPC binding,
// lf.a2a.v1.A2AService), on the client's connection and token. A task is one turn; its
// context is the session. Stub is the generated client, for what the helpers leave out
// (push notification configs).
type A2A struct {
	Stub a2av1.A2AServiceClient
}

// A2A returns the client's A2A calls.
func (c *Client) A2A() *A2A {
	return &A2A{Stub: a2av1.NewA2AServiceClient(c.conn)}
}

// A2ATenant names agent of bundle (`name` or `namespace/name`) in A2A requests; both
// empty: the server's default agent.
func A2ATenant(bundle, agent string) string {
	if bundle == "" && agent == "" {
		return ""
	}
	return bundle + "." + agent
}

// AgentCard returns the extended card of agent of bundle (both empty: the server's
// default agent): the public card plus the agent's details under DetailsExtension.
func (a *A2A) AgentCard(ctx context.Context, bundle, agent string) (*a2av1.AgentCard, error) {
	card, err := a.Stub.GetExtendedAgentCard(ctx, &a2av1.GetExtendedAgentCardRequest{Tenant: A2ATenant(bundle, agent)})
	return card, wrap(err)
}

// Send sends text to the agent tenant names (empty: the default agent), in the context
// (session) contextID or a new one, and returns the task once its turn ended or waits
// for an approval (TASK_STATE_INPUT_REQUIRED).
func (a *A2A) Send(ctx context.Context, tenant, contextID, text string) (*a2av1.Task, error) {
	request := a2aMessage(tenant, contextID, "", &a2av1.Part{Content: &a2av1.Part_Text{Text: text}})
	return taskOf(a.Stub.SendMessage(ctx, request))
}

// Decide answers an input-required task: decision is "allow_once", "allow_always" or
// "deny" (reason is shown to the agent on a deny).
func (a *A2A) Decide(ctx context.Context, task *a2av1.Task, decision, reason string) (*a2av1.Task, error) {
	fields := map[string]any{"decision": decision}
	if reason != "" {
		fields["reason"] = reason
	}
	data, err := structpb.NewValue(fields)
	if err != nil {
		return nil, err
	}
	request := a2aMessage("", task.GetContextId(), task.GetId(), &a2av1.Part{Content: &a2av1.Part_Data{Data: data}})
	return taskOf(a.Stub.SendMessage(ctx, request))
}

// Get returns a task with the last historyLength messages of its history (negative: all).
func (a *A2A) Get(ctx context.Context, taskID string, historyLength int32) (*a2av1.Task, error) {
	request := &a2av1.GetTaskRequest{Id: taskID}
	if historyLength >= 0 {
		request.HistoryLength = &historyLength
	}
	task, err := a.Stub.GetTask(ctx, request)
	return task, wrap(err)
}

// Cancel cancels a task (its turn) and returns it as it ended.
func (a *A2A) Cancel(ctx context.Context, taskID string) (*a2av1.Task, error) {
	task, err := a.Stub.CancelTask(ctx, &a2av1.CancelTaskRequest{Id: taskID})
	return task, wrap(err)
}

// TaskUpdate is one update of a streamed task. Sequence is the session's sequence number
// of the event it comes from, 0 for the task sent first.
type TaskUpdate struct {
	Sequence uint64
	Response *a2av1.StreamResponse
}

// Stream is Send as a stream: the task, then its status updates and the agent's text in
// chunks, until the turn ends or waits for an approval. Breaking out of the loop closes
// the stream.
func (a *A2A) Stream(ctx context.Context, tenant, contextID, text string) iter.Seq2[TaskUpdate, error] {
	request := a2aMessage(tenant, contextID, "", &a2av1.Part{Content: &a2av1.Part_Text{Text: text}})
	return a2aUpdates(ctx, 0, func(ctx context.Context) (streamResponses, error) {
		return a.Stub.SendStreamingMessage(ctx, request)
	})
}

// Subscribe follows a running task from the session's log: the task, then the updates
// whose sequence number is above afterSequence (0: all of them), so a client that lost
// its stream resumes with nothing missed and nothing twice. An ended task is refused
// (codes.FailedPrecondition): read it with Get.
func (a *A2A) Subscribe(ctx context.Context, taskID string, afterSequence uint64) iter.Seq2[TaskUpdate, error] {
	return a2aUpdates(ctx, afterSequence, func(ctx context.Context) (streamResponses, error) {
		return a.Stub.SubscribeToTask(ctx, &a2av1.SubscribeToTaskRequest{Id: taskID})
	})
}

// SequenceOf returns the sequence number an update carries, 0 when it carries none.
func SequenceOf(response *a2av1.StreamResponse) uint64 {
	var metadata *structpb.Struct
	switch {
	case response.GetStatusUpdate() != nil:
		metadata = response.GetStatusUpdate().GetMetadata()
	case response.GetArtifactUpdate() != nil:
		metadata = response.GetArtifactUpdate().GetMetadata()
	}
	value, ok := metadata.GetFields()[SequenceKey]
	if !ok || value.GetNumberValue() < 0 {
		return 0
	}
	return uint64(value.GetNumberValue())
}

// AnswerText returns the text of a task's artifacts: the agent's answer.
func AnswerText(task *a2av1.Task) string {
	var text string
	for _, artifact := range task.GetArtifacts() {
		for _, part := range artifact.GetParts() {
			text += part.GetText()
		}
	}
	return text
}

type streamResponses interface {
	Recv() (*a2av1.StreamResponse, error)
}

func a2aUpdates(ctx context.Context, after uint64, open func(context.Context) (streamResponses, error)) iter.Seq2[TaskUpdate, error] {
	return func(yield func(TaskUpdate, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := open(ctx)
		if err != nil {
			yield(TaskUpdate{}, wrap(err))
			return
		}
		for {
			response, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(TaskUpdate{}, wrap(err))
				return
			}
			sequence := SequenceOf(response)
			if sequence != 0 && sequence <= after {
				continue
			}
			if !yield(TaskUpdate{Sequence: sequence, Response: response}, nil) {
				return
			}
		}
	}
}

func a2aMessage(tenant, contextID, taskID string, part *a2av1.Part) *a2av1.SendMessageRequest {
	return &a2av1.SendMessageRequest{
		Tenant: tenant,
		Message: &a2av1.Message{
			MessageId: newMessageID(),
			Role:      a2av1.Role_ROLE_USER,
			ContextId: contextID,
			TaskId:    taskID,
			Parts:     []*a2av1.Part{part},
		},
	}
}

func newMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func taskOf(response *a2av1.SendMessageResponse, err error) (*a2av1.Task, error) {
	if err != nil {
		return nil, wrap(err)
	}
	task := response.GetTask()
	if task == nil {
		return nil, errors.New("odyssey: SendMessage answered a message instead of a task")
	}
	return task, nil
}

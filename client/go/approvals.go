package odyssey

import (
	"context"
	"fmt"
	"iter"

	"google.golang.org/protobuf/types/known/structpb"

	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
)

// ListApprovals iterates the pending approval requests, oldest first, of one session (or
// of all when sessionID is empty), page after page.
func (c *Client) ListApprovals(ctx context.Context, sessionID string) iter.Seq2[*odysseyv1.Approval, error] {
	return pages(ctx, c, func(ctx context.Context, token string) ([]*odysseyv1.Approval, string, error) {
		r, err := c.Approvals.ListApprovals(ctx, &odysseyv1.ListApprovalsRequest{
			SessionId: sessionID,
			PageToken: token,
		})
		return r.GetApprovals(), r.GetNextPageToken(), err
	})
}

// ResolveApproval answers a waiting tool call.
func (c *Client) ResolveApproval(ctx context.Context, requestID string, decision odysseyv1.ApprovalDecision, reason string) (*odysseyv1.Approval, error) {
	r, err := c.Approvals.ResolveApproval(ctx, &odysseyv1.ResolveApprovalRequest{
		RequestId: requestID,
		Decision:  decision,
		Reason:    reason,
	})
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetApproval(), nil
}

// Allow is how far an approval reaches: AllowOnce or AllowAlways.
type Allow odysseyv1.ApprovalDecision

const (
	// AllowOnce lets this one call run.
	AllowOnce = Allow(odysseyv1.ApprovalDecision_APPROVAL_DECISION_ALLOW_ONCE)
	// AllowAlways lets this call run and matching calls of the session from now on.
	AllowAlways = Allow(odysseyv1.ApprovalDecision_APPROVAL_DECISION_ALLOW_ALWAYS)
)

// Approve lets the waiting tool call run, once or always (see Allow).
func (c *Client) Approve(ctx context.Context, requestID string, allow Allow) error {
	_, err := c.ResolveApproval(ctx, requestID, odysseyv1.ApprovalDecision(allow), "")
	return err
}

// Deny refuses the waiting tool call; reason is shown to the model.
func (c *Client) Deny(ctx context.Context, requestID, reason string) error {
	_, err := c.ResolveApproval(ctx, requestID, odysseyv1.ApprovalDecision_APPROVAL_DECISION_DENY, reason)
	return err
}

// IsInput reports whether a pending request is an MCP server's request for a person's
// input (kind INPUT) rather than a tool call: its Message says what the server asks, and
// its RequestedSchema the fields of the answer.
func IsInput(approval *odysseyv1.Approval) bool {
	return approval.GetKind() == odysseyv1.ApprovalKind_APPROVAL_KIND_INPUT
}

// Answer accepts a request for input with answer, the fields of its RequestedSchema
// (string, number, integer, boolean, or a list of choices). An answer that does not match
// the schema fails with InvalidArgument naming the field (`answer.days`), and the request
// still waits.
func (c *Client) Answer(ctx context.Context, requestID string, answer map[string]any) (*odysseyv1.Approval, error) {
	fields, err := structpb.NewStruct(answer)
	if err != nil {
		return nil, fmt.Errorf("the answer cannot be sent: %w", err)
	}
	return c.resolveInput(ctx, requestID, odysseyv1.HumanInputAction_HUMAN_INPUT_ACTION_ACCEPT, fields)
}

// Decline refuses a request for input; CancelInput dismisses it without a choice. The
// server is told which.
func (c *Client) Decline(ctx context.Context, requestID string) (*odysseyv1.Approval, error) {
	return c.resolveInput(ctx, requestID, odysseyv1.HumanInputAction_HUMAN_INPUT_ACTION_DECLINE, nil)
}

// CancelInput dismisses a request for input without a choice.
func (c *Client) CancelInput(ctx context.Context, requestID string) (*odysseyv1.Approval, error) {
	return c.resolveInput(ctx, requestID, odysseyv1.HumanInputAction_HUMAN_INPUT_ACTION_CANCEL, nil)
}

func (c *Client) resolveInput(ctx context.Context, requestID string, action odysseyv1.HumanInputAction, answer *structpb.Struct) (*odysseyv1.Approval, error) {
	r, err := c.Approvals.ResolveApproval(ctx, &odysseyv1.ResolveApprovalRequest{
		RequestId: requestID,
		Action:    action,
		Answer:    answer,
	})
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetApproval(), nil
}

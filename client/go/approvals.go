package odyssey

import (
	"context"
	"iter"

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

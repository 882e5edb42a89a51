package odyssey

import (
	"context"

	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
)

// ListApprovals returns the pending approval requests, oldest first, of one session (or
// of all when sessionID is empty), following every page.
func (c *Client) ListApprovals(ctx context.Context, sessionID string) ([]*odysseyv1.Approval, error) {
	var all []*odysseyv1.Approval
	token := ""
	for {
		r, err := c.Approvals.ListApprovals(c.Context(ctx), &odysseyv1.ListApprovalsRequest{
			SessionId: sessionID,
			PageToken: token,
		})
		if err != nil {
			return nil, wrap(err)
		}
		all = append(all, r.GetApprovals()...)
		if token = r.GetNextPageToken(); token == "" {
			return all, nil
		}
	}
}

// ResolveApproval answers a waiting tool call.
func (c *Client) ResolveApproval(ctx context.Context, requestID string, decision odysseyv1.ApprovalDecision, reason string) (*odysseyv1.Approval, error) {
	r, err := c.Approvals.ResolveApproval(c.Context(ctx), &odysseyv1.ResolveApprovalRequest{
		RequestId: requestID,
		Decision:  decision,
		Reason:    reason,
	})
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetApproval(), nil
}

// Approve lets the waiting tool call run; always also allows matching calls of the
// session from now on.
func (c *Client) Approve(ctx context.Context, requestID string, always bool) error {
	decision := odysseyv1.ApprovalDecision_APPROVAL_DECISION_ALLOW_ONCE
	if always {
		decision = odysseyv1.ApprovalDecision_APPROVAL_DECISION_ALLOW_ALWAYS
	}
	_, err := c.ResolveApproval(ctx, requestID, decision, "")
	return err
}

// Deny refuses the waiting tool call; reason is shown to the model.
func (c *Client) Deny(ctx context.Context, requestID, reason string) error {
	_, err := c.ResolveApproval(ctx, requestID, odysseyv1.ApprovalDecision_APPROVAL_DECISION_DENY, reason)
	return err
}

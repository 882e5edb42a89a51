package odyssey

import (
	"context"
	"errors"
	"io"
	"iter"

	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc"
)

// BuildOptions are the options of InstallBundle, BuildBundle, ImportBundle and
// PullBundle.
type BuildOptions struct {
	// Namespace to install into; the server's default (`local`) when empty.
	Namespace string
	// Replace an installed bundle of the same version with different content.
	Force bool
}

// InitBundle returns a new bundle project (named name; `hello` when empty) as a tar +
// gzip archive of the scaffold.
func (c *Client) InitBundle(ctx context.Context, name string) ([]byte, error) {
	r, err := read(ctx, c, func(ctx context.Context) (*odysseyv1.InitBundleResponse, error) {
		return c.Bundles.InitBundle(ctx, &odysseyv1.InitBundleRequest{Name: name})
	})
	return r.GetArchive(), err
}

// InstallBundle packs the bundle project in dir, uploads it and returns the installed
// bundle.
func (c *Client) InstallBundle(ctx context.Context, dir string, opts BuildOptions) (*odysseyv1.Bundle, error) {
	archive, err := PackProject(dir)
	if err != nil {
		return nil, err
	}
	return c.BuildBundle(ctx, archive, opts)
}

// BuildBundle builds and installs a bundle project sent as a tar + gzip archive.
func (c *Client) BuildBundle(ctx context.Context, archive []byte, opts BuildOptions) (*odysseyv1.Bundle, error) {
	stream, err := c.Bundles.BuildBundle(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	first := &odysseyv1.BuildBundleRequest{Item: &odysseyv1.BuildBundleRequest_Options{
		Options: &odysseyv1.BuildOptions{Namespace: opts.Namespace, Force: opts.Force},
	}}
	r, err := upload(stream, first, archive, func(chunk []byte) *odysseyv1.BuildBundleRequest {
		return &odysseyv1.BuildBundleRequest{Item: &odysseyv1.BuildBundleRequest_Chunk{Chunk: chunk}}
	})
	return r.GetBundle(), err
}

// ImportBundle installs a bundle archive made by ExportBundle.
func (c *Client) ImportBundle(ctx context.Context, archive []byte, opts BuildOptions) (*odysseyv1.Bundle, error) {
	stream, err := c.Bundles.ImportBundle(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	first := &odysseyv1.ImportBundleRequest{Item: &odysseyv1.ImportBundleRequest_Options{
		Options: &odysseyv1.ImportOptions{Namespace: opts.Namespace, Force: opts.Force},
	}}
	r, err := upload(stream, first, archive, func(chunk []byte) *odysseyv1.ImportBundleRequest {
		return &odysseyv1.ImportBundleRequest{Item: &odysseyv1.ImportBundleRequest_Chunk{Chunk: chunk}}
	})
	return r.GetBundle(), err
}

// upload sends first, then archive in chunks, and returns the server's answer. When a
// send fails the server's status is reported: Send returns io.EOF when the server has
// already answered, and the answer is what the caller needs.
func upload[Req, Res any](stream grpc.ClientStreamingClient[Req, Res], first *Req, archive []byte, chunk func([]byte) *Req) (*Res, error) {
	fail := func(err error) (*Res, error) {
		if _, recvErr := stream.CloseAndRecv(); recvErr != nil {
			return nil, wrap(recvErr)
		}
		return nil, wrap(err)
	}
	if err := stream.Send(first); err != nil {
		return fail(err)
	}
	for start := 0; start < len(archive); start += chunkBytes {
		end := min(start+chunkBytes, len(archive))
		if err := stream.Send(chunk(archive[start:end])); err != nil {
			return fail(err)
		}
	}
	r, err := stream.CloseAndRecv()
	return r, wrap(err)
}

// InspectBundle returns an installed bundle with its agents, skills, tools, sandbox
// policy and README.
func (c *Client) InspectBundle(ctx context.Context, reference string) (*odysseyv1.InspectBundleResponse, error) {
	return read(ctx, c, func(ctx context.Context) (*odysseyv1.InspectBundleResponse, error) {
		return c.Bundles.InspectBundle(ctx, &odysseyv1.InspectBundleRequest{Reference: reference})
	})
}

// ListOptions narrow a List call and set its page size (the server's default when 0).
type ListOptions struct {
	// ListBundles: only this namespace. ListSessions: only sessions of this bundle name
	// (or `ns/name`).
	Namespace, Bundle string
	// ListSessions: only sessions of this agent.
	AgentID string
	// ListSessions: only the sub-agent sessions this session started.
	ParentSessionID string
	// ListApprovals: only requests of this session.
	SessionID string
	PageSize  int32
}

// ListBundles iterates every installed bundle, page after page.
func (c *Client) ListBundles(ctx context.Context, opts ListOptions) iter.Seq2[*odysseyv1.Bundle, error] {
	return pages(ctx, c, func(ctx context.Context, token string) ([]*odysseyv1.Bundle, string, error) {
		r, err := c.Bundles.ListBundles(ctx, &odysseyv1.ListBundlesRequest{
			Namespace: opts.Namespace, PageSize: opts.PageSize, PageToken: token,
		})
		return r.GetBundles(), r.GetNextPageToken(), err
	})
}

// DeleteBundle uninstalls a bundle and returns what was removed.
func (c *Client) DeleteBundle(ctx context.Context, reference string) (*odysseyv1.Bundle, error) {
	r, err := c.Bundles.DeleteBundle(ctx, &odysseyv1.DeleteBundleRequest{Reference: reference})
	return r.GetBundle(), wrap(err)
}

// ExportBundle returns an installed bundle and its archive, which ImportBundle installs.
func (c *Client) ExportBundle(ctx context.Context, reference string) (*odysseyv1.Bundle, []byte, error) {
	type exported struct {
		bundle  *odysseyv1.Bundle
		archive []byte
	}
	e, err := read(ctx, c, func(ctx context.Context) (exported, error) {
		stream, err := c.Bundles.ExportBundle(ctx, &odysseyv1.ExportBundleRequest{Reference: reference})
		if err != nil {
			return exported{}, err
		}
		var e exported
		for {
			part, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return e, nil
			} else if err != nil {
				return exported{}, err
			}
			if part.GetBundle() != nil {
				e.bundle = part.GetBundle()
			}
			e.archive = append(e.archive, part.GetChunk()...)
		}
	})
	return e.bundle, e.archive, err
}

// PushBundle publishes an installed bundle to an OCI registry: target is
// `[registry[:port]/]repository[:tag]` (the server's default registry when empty); the
// credentials are the server's.
func (c *Client) PushBundle(ctx context.Context, reference, target string) (*odysseyv1.PushBundleResponse, error) {
	r, err := c.Bundles.PushBundle(ctx, &odysseyv1.PushBundleRequest{Reference: reference, Target: target})
	return r, wrap(err)
}

// PullBundle installs a bundle from an OCI registry.
func (c *Client) PullBundle(ctx context.Context, reference string, opts BuildOptions) (*odysseyv1.PullBundleResponse, error) {
	r, err := c.Bundles.PullBundle(ctx, &odysseyv1.PullBundleRequest{
		Reference: reference, Namespace: opts.Namespace, Force: opts.Force,
	})
	return r, wrap(err)
}

// ListAgents returns the agents of an installed bundle, with the model this server runs
// each on.
func (c *Client) ListAgents(ctx context.Context, bundleReference string) ([]*odysseyv1.AgentInfo, error) {
	r, err := read(ctx, c, func(ctx context.Context) (*odysseyv1.ListAgentsResponse, error) {
		return c.Bundles.ListAgents(ctx, &odysseyv1.ListAgentsRequest{BundleReference: bundleReference})
	})
	return r.GetAgents(), err
}

// ListModels returns the models of an installed bundle's agents.
func (c *Client) ListModels(ctx context.Context, bundleReference string) ([]*odysseyv1.ModelInfo, error) {
	r, err := read(ctx, c, func(ctx context.Context) (*odysseyv1.ListModelsResponse, error) {
		return c.Bundles.ListModels(ctx, &odysseyv1.ListModelsRequest{BundleReference: bundleReference})
	})
	return r.GetModels(), err
}

// ListSkills returns the skills of an installed bundle.
func (c *Client) ListSkills(ctx context.Context, bundleReference string) ([]*odysseyv1.SkillInfo, error) {
	r, err := read(ctx, c, func(ctx context.Context) (*odysseyv1.ListSkillsResponse, error) {
		return c.Bundles.ListSkills(ctx, &odysseyv1.ListSkillsRequest{BundleReference: bundleReference})
	})
	return r.GetSkills(), err
}

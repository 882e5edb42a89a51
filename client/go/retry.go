package odyssey

import (
	"context"
	"iter"
	"time"

	"google.golang.org/grpc/codes"
)

// DefaultReadRetry retries a read a few times after codes.Unavailable, about 1.5 s in
// all: a server restarting or a connection re-established.
var DefaultReadRetry = ReconnectPolicy{
	InitialDelay: 100 * time.Millisecond,
	MaxDelay:     time.Second,
	MaxAttempts:  4,
}

// read runs a read-only call, retrying codes.Unavailable with backoff as the client's
// read policy allows; errors come back as *Error.
func read[T any](ctx context.Context, c *Client, call func(context.Context) (T, error)) (T, error) {
	attempts := 0
	for {
		r, err := call(ctx)
		if err == nil {
			return r, nil
		}
		err = wrap(err)
		if Code(err) != codes.Unavailable || attempts >= c.readRetry.MaxAttempts {
			var zero T
			return zero, err
		}
		attempts++
		select {
		case <-time.After(c.readRetry.Delay(attempts)):
		case <-ctx.Done():
			var zero T
			return zero, err
		}
	}
}

// submitAttempts bounds how often a submit refused for a full queue is sent, and
// longestRetryDelay the pause the server may ask for.
const (
	submitAttempts    = 3
	longestRetryDelay = 10 * time.Second
)

// submit runs a Submit or Run, again after the server's delay while it refuses it with
// codes.ResourceExhausted and a RetryInfo (a full queue: nothing happened, so sending it
// again is safe). Writes are never retried otherwise.
func submit[T any](ctx context.Context, call func(context.Context) (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		r, err := call(ctx)
		if err == nil {
			return r, nil
		}
		err = wrap(err)
		e, ok := err.(*Error)
		if !ok || e.Code != codes.ResourceExhausted || e.RetryDelay <= 0 || attempt >= submitAttempts {
			var zero T
			return zero, err
		}
		select {
		case <-time.After(min(e.RetryDelay, longestRetryDelay)):
		case <-ctx.Done():
			var zero T
			return zero, err
		}
	}
}

// pages iterates the items of every page of a List call: fetch returns one page's items
// and the next page's token ("" after the last). Each page is a read, retried as such.
// An error ends the iteration after it is yielded.
func pages[T any](ctx context.Context, c *Client, fetch func(ctx context.Context, token string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		token := ""
		for {
			type page struct {
				items []T
				next  string
			}
			p, err := read(ctx, c, func(ctx context.Context) (page, error) {
				items, next, err := fetch(ctx, token)
				return page{items, next}, err
			})
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range p.items {
				if !yield(item, nil) {
					return
				}
			}
			if token = p.next; token == "" {
				return
			}
		}
	}
}

// Collect gathers what an iterator of this package yields into a slice, stopping at the
// first error.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var all []T
	for item, err := range seq {
		if err != nil {
			return all, err
		}
		all = append(all, item)
	}
	return all, nil
}

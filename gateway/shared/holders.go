package shared

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fleet's table of stored Responses API responses: which upstream
// stored each response id, so that any replica places a continuation
// (previous_response_id) where the response is. One key a response, with
// the table's time to live; read only by a continuation, written once by
// the replica that relayed the answer.

// PutHolder records that upstream stored the response id, for ttl.
func (c *Client) PutHolder(ctx context.Context, id, upstream string, ttl time.Duration) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if err := c.rdb.Set(ctx, c.key("resp", id), upstream, ttl).Err(); err != nil {
		c.failed("holder write", err)
	}
}

// Holder returns the upstream that stored the response id; ok is false
// when the fleet has no record of it. err is set when Redis could not be
// asked (the caller then answers from its own table).
func (c *Client) Holder(ctx context.Context, id string) (upstream string, ok bool, err error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	v, err := c.rdb.Get(ctx, c.key("resp", id)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		c.failed("holder read", err)
		return "", false, err
	}
	return v, true, nil
}

// DropHolder forgets the response id (it was deleted).
func (c *Client) DropHolder(ctx context.Context, id string) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if err := c.rdb.Del(ctx, c.key("resp", id)).Err(); err != nil {
		c.failed("holder delete", err)
	}
}

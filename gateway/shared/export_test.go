package shared

import "context"

// Kill stops a client as a killed process would: no settlement, no lease
// returned, its connections dropped.
func Kill(c *Client) {
	c.once.Do(func() {
		if c.lz != nil {
			close(c.lz.stop)
			<-c.lz.done
		}
		close(c.stop)
		<-c.done
		c.health.close()
		_ = c.rdb.Close()
	})
}

// ReplicaID is the client's replica id.
func ReplicaID(c *Client) string { return c.id }

// Sync runs one of the replica's syncer pipelines now (the cadence a test
// drives: its SyncInterval is left long enough never to tick).
func Sync(c *Client) { c.lz.sync(true, false) }

// Beat runs the replica's heartbeat now (it notices Redis is back).
func Beat(c *Client) { c.heartbeat(context.Background()) }

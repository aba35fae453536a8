package shared

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

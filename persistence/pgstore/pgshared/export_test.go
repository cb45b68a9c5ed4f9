package pgshared

// Crash stops the node's goroutines (heartbeat, reaper, listener) and closes the pool
// it opened without giving anything back: a node that died, as the others see it.
func (n *Node) Crash() {
	n.closeOnce.Do(func() {
		n.stopBackground()
		if n.ownPool {
			n.pool.Close()
		}
	})
}

// Listening reports whether LISTEN is in place.
func (n *Node) Listening() bool { return n.listening.Load() }

// ReapRounds counts the reaper rounds this node ran.
func (n *Node) ReapRounds() int64 { return n.reapRounds.Load() }

// Tables returns the names of the messages and nodes tables.
func (n *Node) Tables() (msgs, nodes string) { return n.t.msgs, n.t.nodes }

// Owes reports whether a notification was dropped and its "" not yet sent.
func (n *Node) Owes() bool { return n.overflow.Load() }

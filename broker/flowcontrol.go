package broker

import "time"

// NoSpaceWait is how long a SEND that found no room may be held: 0 not at all (an ERROR
// at once), negative without a limit (sendFailIfNoSpace false). See package
// broker/flowcontrol.
func (c *Conn) NoSpaceWait() time.Duration { return c.flow.NoSpaceWait() }

package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

func TestParseOrder(t *testing.T) {
	assert.True(t, IsManagement("ActiveMQ.Scheduler.Management"))
	assert.True(t, IsManagement("activemq.scheduler.management.x"))
	assert.False(t, IsManagement("ActiveMQ.Scheduler"))

	_, ok, err := ParseOrder(&persistence.Message{})
	require.NoError(t, err)
	assert.False(t, ok, "no action: nothing to do")

	o, ok, err := ParseOrder(&persistence.Message{Headers: persistence.Headers{HeaderAction, ActionRemove, HeaderJobID, "ID:1"}})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, Order{Action: ActionRemove, JobID: "ID:1", Start: 0, End: AllTimes}, o)

	o, _, err = ParseOrder(&persistence.Message{Headers: persistence.Headers{HeaderAction, ActionBrowse, HeaderActionStart, "10", HeaderActionEnd, " 20 "}})
	require.NoError(t, err)
	assert.Equal(t, int64(10), o.Start)
	assert.Equal(t, int64(20), o.End)

	o, _, err = ParseOrder(&persistence.Message{Headers: persistence.Headers{HeaderAction, ActionRemoveAll, HeaderActionStart, "10"}})
	require.NoError(t, err)
	assert.Equal(t, [2]int64{0, AllTimes}, [2]int64{o.Start, o.End}, "one end alone: every job, as ActiveMQ")

	_, _, err = ParseOrder(&persistence.Message{Headers: persistence.Headers{HeaderAction, ActionBrowse, HeaderActionEnd, "soon"}})
	require.ErrorIs(t, err, destinations.ErrInvalidDestination)
	assert.Contains(t, err.Error(), `ACTION_END_TIME "soon"`)
}

package loglimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestOnceAMinute(t *testing.T) {
	var l Limit
	t0 := time.Unix(1_700_000_000, 0)
	ok, n := l.Allow(t0)
	assert.True(t, ok)
	assert.Zero(t, n)
	for i := range 3 {
		ok, _ = l.Allow(t0.Add(time.Duration(i+1) * time.Second))
		assert.False(t, ok)
	}
	ok, n = l.Allow(t0.Add(Every))
	assert.True(t, ok, "a minute later")
	assert.Equal(t, 3, n, "the lines held back meanwhile are counted")
	ok, _ = l.Allow(t0.Add(Every + time.Second))
	assert.False(t, ok)
}

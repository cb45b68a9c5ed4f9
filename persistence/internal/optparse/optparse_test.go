package optparse

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type opts struct {
	Name string
	N    int64
	D    time.Duration
}

var keys = []Key[opts]{
	{Name: "name", Allowed: "a name", Set: func(o *opts, raw any) string {
		s, ok := raw.(string)
		if !ok {
			return "not a name"
		}
		o.Name = s
		return ""
	}},
	SizeKey("bigSize", "a size", 1<<10, 1<<20, "not a size", func(o *opts) *int64 { return &o.N }),
	{Name: "wait", Allowed: "a duration", Set: func(o *opts, raw any) string {
		d, problem := Duration(raw)
		o.D = d
		return problem
	}},
}

type failure struct{ key, val, problem, allowed string }

func (f *failure) Error() string {
	return fmt.Sprintf("%s=%q: %s (%s)", f.key, f.val, f.problem, f.allowed)
}

func fail(key, val, problem, allowed string) error { return &failure{key, val, problem, allowed} }

func TestApply(t *testing.T) {
	var o opts
	require.NoError(t, Apply(&o, map[string]any{"NAME": "x", "bigsize": "2kb", "Wait": 1500}, keys, fail))
	require.Equal(t, opts{Name: "x", N: 2 << 10, D: 1500 * time.Millisecond}, o, "keys match case-insensitively; a number is ms")
	require.NoError(t, Apply(&o, nil, keys, fail))
	require.NoError(t, Apply(&o, map[string]any{"bigsize": "1mb"}, keys, fail))
	require.EqualValues(t, 1<<20, o.N, "a size key's bounds are inclusive")
}

func TestApplyErrors(t *testing.T) {
	cases := []struct {
		raw  map[string]any
		want failure
	}{
		{map[string]any{"bogus": 1}, failure{"bogus", "", "unknown option", "name, bigSize, wait"}},
		{map[string]any{"name": 5}, failure{"name", "5", "not a name", "a name"}},
		{map[string]any{"name": []int{1}}, failure{"name", "[1]", "must be a string, a number or a boolean, not []int", "a name"}},
		{map[string]any{"bigsize": "lots"}, failure{"bigSize", "lots", "not a size", "a size"}},
		{map[string]any{"bigsize": 1023}, failure{"bigSize", "1023", "not a size", "a size"}},
		{map[string]any{"bigsize": "2mb"}, failure{"bigSize", "2mb", "not a size", "a size"}},
		{map[string]any{"bigsize": -5}, failure{"bigSize", "-5", "not a size", "a size"}},
		{map[string]any{"wait": "soon"}, failure{"wait", "soon", "not a duration", "a duration"}},
		{map[string]any{"wait": "0s"}, failure{"wait", "0s", "duration out of range", "a duration"}},
		{map[string]any{"wait": "25h"}, failure{"wait", "25h", "duration out of range", "a duration"}},
		{map[string]any{"wait": 1.5}, failure{"wait", "1.5", "not a valid duration", "a duration"}},
		{map[string]any{"wait": int64(MaxDuration/time.Millisecond) + 1}, failure{"wait", "86400001", "not a valid duration", "a duration"}},
		// keys are taken in sorted order: the same error every time
		{map[string]any{"wait": "soon", "name": 5, "zzz": 1}, failure{"name", "5", "not a name", "a name"}},
	}
	for _, c := range cases {
		var o opts
		err := Apply(&o, c.raw, keys, fail)
		var f *failure
		require.True(t, errors.As(err, &f), "%v: %v", c.raw, err)
		require.Equal(t, c.want, *f, "%v", c.raw)
	}
}

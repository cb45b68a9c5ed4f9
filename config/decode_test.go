package config

import (
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sample has a field of every scalar type a section may use; sections added
// later decode through the same hook.
type sample struct {
	S string        `mapstructure:"s"`
	B bool          `mapstructure:"b"`
	I int           `mapstructure:"i"`
	L int64         `mapstructure:"l"`
	F float64       `mapstructure:"f"`
	D time.Duration `mapstructure:"d"`
}

func decodeSample(in map[string]any) (sample, *Error) {
	var s sample
	d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &s, ErrorUnused: true, DecodeHook: scalarHook})
	if err != nil {
		panic(err)
	}
	if err := d.Decode(in); err != nil {
		return s, decodeError(err)
	}
	return s, nil
}

func TestScalarHook(t *testing.T) {
	tests := []struct {
		in   map[string]any
		want sample
	}{
		{map[string]any{"s": "x", "b": true, "i": 3, "l": 4, "f": 1.5, "d": 250},
			sample{S: "x", B: true, I: 3, L: 4, F: 1.5, D: 250 * time.Millisecond}},
		{map[string]any{"s": 1234, "b": "false", "i": "3", "l": " 4 ", "f": "2", "d": "5s"},
			sample{S: "1234", I: 3, L: 4, F: 2, D: 5 * time.Second}},
		{map[string]any{"s": 1.25, "b": "1", "i": 3.0, "f": 7, "d": "30000"},
			sample{S: "1.25", B: true, I: 3, F: 7, D: 30 * time.Second}},
		{map[string]any{"s": true, "b": nil}, sample{S: "true"}},
	}
	for _, tt := range tests {
		got, err := decodeSample(tt.in)
		require.Nil(t, err, "%v: %v", tt.in, err)
		assert.Equal(t, tt.want, got)
	}
}

func TestScalarHookErrors(t *testing.T) {
	tests := []struct {
		in      map[string]any
		key     string
		problem string
	}{
		{map[string]any{"b": "yes please"}, "b", "not a boolean"},
		{map[string]any{"b": 2}, "b", "not a boolean"},
		{map[string]any{"i": "three"}, "i", "not an integer"},
		{map[string]any{"i": 1.5}, "i", "not an integer"},
		{map[string]any{"l": true}, "l", "not an integer"},
		{map[string]any{"f": "x"}, "f", "not a number"},
		{map[string]any{"f": false}, "f", "not a number"},
		{map[string]any{"d": "soon"}, "d", "not a duration"},
		{map[string]any{"d": 1.5}, "d", "not a duration"},
		{map[string]any{"s": map[string]any{"a": 1}}, "s", "single value"},
		{map[string]any{"i": []any{1}}, "i", "single value"},
		{map[string]any{"zz": 1}, "", "has invalid keys: zz"},
	}
	for _, tt := range tests {
		_, err := decodeSample(tt.in)
		require.NotNil(t, err, "%v", tt.in)
		assert.Equal(t, tt.key, err.Key, "%v", tt.in)
		assert.Contains(t, err.Problem, tt.problem, "%v", tt.in)
	}
}

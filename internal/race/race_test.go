package race

import (
	"testing"
	"time"
)

func TestScale(t *testing.T) {
	want := time.Second
	if Enabled {
		want = Factor * time.Second
	}
	if got := Scale(time.Second); got != want {
		t.Errorf("Scale(1s) = %v with Enabled %v, want %v", got, Enabled, want)
	}
}

package setting

import "testing"

func TestWholeNumberAndBool(t *testing.T) {
	good := map[any]int64{7: 7, int64(9): 9, uint32(3): 3, 12.0: 12, "42": 42, " 5 ": 5, uint64(1 << 40): 1 << 40}
	for in, want := range good {
		if got, err := WholeNumber(in); err != nil || got != want {
			t.Errorf("WholeNumber(%#v) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []any{-1, 1.5, "x", "-3", nil, true, uint64(1 << 63)} {
		if _, err := WholeNumber(in); err == nil {
			t.Errorf("WholeNumber(%#v) accepted", in)
		}
	}
	for in, want := range map[any]bool{true: true, "false": false, " TRUE ": true} {
		if got, ok := Bool(in); !ok || got != want {
			t.Errorf("Bool(%#v) = %v, %v", in, got, ok)
		}
	}
	if _, ok := Bool("yes please"); ok {
		t.Error(`Bool("yes please") accepted`)
	}
}

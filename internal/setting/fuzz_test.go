package setting

import "testing"

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "64mb", "1 GiB", "9223372036854775807", "8388607tb", "-1", "1.5k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}

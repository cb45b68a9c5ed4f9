package destinations

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want []Name
	}{
		{"/queue/A.B", []Name{{Kind: Queue, Name: "A.B"}}},
		{"/topic/T", []Name{{Kind: Topic, Name: "T"}}},
		{"/queue/foo/bar", []Name{{Kind: Queue, Name: "foo/bar"}}},
		{"plain", []Name{{Kind: Queue, Name: "plain"}}},
		{"/temp-queue/r", []Name{{Kind: TempQueue, Name: "r"}}},
		{"/remote-temp-topic/ID:x", []Name{{Kind: TempTopic, Name: "ID:x", Remote: true}}},
		{"/queue/A,/topic/B,C", []Name{{Kind: Queue, Name: "A"}, {Kind: Topic, Name: "B"}, {Kind: Queue, Name: "C"}}},
		{"topic://X", []Name{{Kind: Topic, Name: "X"}}},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.in, err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("Parse(%q) = %v, want %v", c.in, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("Parse(%q)[%d] = %+v, want %+v", c.in, i, got[i], c.want[i])
			}
		}
	}
	for _, bad := range []string{"", "/queue/", "/topic/", "/queue/a,", "/queue/a\nb"} {
		if _, err := Parse(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) err = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestNameRoundTrip(t *testing.T) {
	for _, s := range []string{"/queue/A", "/topic/B.C", "/temp-queue/x", "/temp-topic/y", "/remote-temp-queue/ID:1"} {
		n, err := ParseOne(s)
		if err != nil {
			t.Fatal(err)
		}
		if n.String() != s {
			t.Errorf("round trip %q -> %q", s, n.String())
		}
	}
	n, _ := ParseOne("/topic/B")
	if n.Qualified() != "topic://B" {
		t.Errorf("qualified = %q", n.Qualified())
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"PRICE.>", "PRICE.STOCK.NASDAQ.IBM", true},
		{"PRICE.>", "PRICE.A", true},
		{"PRICE.>", "PRICE", false},
		{"PRICE.STOCK.*.IBM", "PRICE.STOCK.NYSE.IBM", true},
		{"PRICE.STOCK.*.IBM", "PRICE.STOCK.NYSE.SUN", false},
		{"*", "A", true},
		{"*", "A.B", false},
		{"A.*", "A", false},
		{"A", "A", true},
		{"A", "A.B", false},
		{">", "A.B.C", true},
	}
	for _, c := range cases {
		if got := Match(c.pattern, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	if !IsWildcard("A.*.B") || !IsWildcard("A.>") || IsWildcard("A.B*") {
		t.Error("IsWildcard wrong")
	}
}

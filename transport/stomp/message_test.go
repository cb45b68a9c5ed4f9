package stomp

import (
	"fmt"
	"testing"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// sendWithHeaders is a SEND with n distinct application headers x-h-0000... after its
// destination.
func sendWithHeaders(n int) *frame.Frame {
	f := frame.New("SEND", "destination", "/queue/many")
	for i := range n {
		f.Header.Add(fmt.Sprintf("x-h-%04d", i), "v")
	}
	return f
}

// TestMessageFromSendFirstHeaderWins: a repeated header keeps its first value, in a small
// frame and in one with more headers than smallHeaderCount alike; the headers that
// are kept keep their order, and reserved ones are dropped.
func TestMessageFromSendFirstHeaderWins(t *testing.T) {
	for _, filler := range []int{0, smallHeaderCount, 500} {
		t.Run(fmt.Sprint(filler, " more headers"), func(t *testing.T) {
			f := frame.New("SEND", "destination", "/queue/a", "a", "1", "priority", "7", "b", "2")
			for i := range filler {
				f.Header.Add(fmt.Sprintf("f%d", i), "x")
			}
			f.Header.Add("a", "again")
			f.Header.Add("priority", "2")
			f.Header.Add("b", "again")
			f.Header.Add("c", "3")
			f.Header.Add("destination", "/queue/other")
			m, err := messageFromSend(f)
			require.NoError(t, err)
			require.EqualValues(t, 7, m.Priority, "first priority wins")
			want := persistence.Headers{"a", "1", "b", "2"}
			for i := range filler {
				want = append(want, fmt.Sprintf("f%d", i), "x")
			}
			want = append(want, "c", "3")
			require.Equal(t, want, m.Headers)
		})
	}
}

// TestMessageFromSendLinearInHeaders: building the message of a SEND costs O(1) per
// header. The work is counted, not timed (issue 27): the names the check for repeated
// headers compares or looks up, and the allocations, for frames of 100 and of 1000
// headers (the default maxHeaders). A check that scans the earlier headers looks at
// n(n-1)/2 names: 499,500 for the big frame. BenchmarkMessageFromSendManyHeaders has
// the time (docs/benchmarks.md, "Issue 27").
func TestMessageFromSendLinearInHeaders(t *testing.T) {
	allocs := map[int]float64{}
	for _, n := range []int{100, 1000} {
		f := sendWithHeaders(n - 1)
		var looked int
		m, err := buildMessage(f, &looked)
		require.NoError(t, err)
		require.Len(t, m.Headers, 2*(n-1))
		require.LessOrEqual(t, looked, n, "names looked at to find repeated headers among %d: not O(1) per header", n)
		allocs[n] = testing.AllocsPerRun(20, func() {
			if _, err := messageFromSend(f); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("allocations: %v with 100 headers, %v with 1000", allocs[100], allocs[1000])
	// The map of names takes a table or two more for 1000; an allocation per header
	// would add 900.
	require.LessOrEqual(t, allocs[1000], allocs[100]+10, "allocations grow with the header count")
}

// BenchmarkMessageFromSendManyHeaders builds the message of a SEND with 1000 headers.
func BenchmarkMessageFromSendManyHeaders(b *testing.B) {
	f := sendWithHeaders(999)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := messageFromSend(f); err != nil {
			b.Fatal(err)
		}
	}
}

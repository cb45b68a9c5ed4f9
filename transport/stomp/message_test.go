package stomp

import (
	"fmt"
	"testing"
	"time"

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
// header, so one frame with 1000 headers (the default maxHeaders) costs about what ten
// frames of 100 do (measured: under twice, its bigger map and slices being less cache
// friendly). A check for repeated names that scans the earlier headers makes the big
// frame about nine times as dear (500,000 comparisons against 49,500). The fastest of
// many runs is compared, so a busy machine does not make the test fail.
func TestMessageFromSendLinearInHeaders(t *testing.T) {
	big, small := sendWithHeaders(999), sendWithHeaders(99)
	fastest := func(build func()) time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 30 {
			start := time.Now()
			build()
			best = min(best, time.Since(start))
		}
		return best
	}
	one := func(f *frame.Frame) {
		m, err := messageFromSend(f)
		require.NoError(t, err)
		require.Len(t, m.Headers, 2*(f.Header.Len()-1))
	}
	bigCost := fastest(func() { one(big) })
	smallCost := fastest(func() {
		for range 10 {
			one(small)
		}
	})
	t.Logf("1 frame of 1000 headers: %v; 10 frames of 100: %v", bigCost, smallCost)
	require.Less(t, bigCost, 4*smallCost,
		"one frame of 1000 headers costs %v, ten of 100 cost %v: not linear in the header count", bigCost, smallCost)
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

package selector

import (
	"testing"

	"github.com/activemq-go/broker/persistence"
)

var benchSelectors = []struct{ name, sel string }{
	{"TypeAndAmount", "type = 'order' AND amount > 100"},
	{"InAndPriority", "region IN ('EU','US') AND priority >= 5"},
	{"LikePrefix", "name LIKE 'abc%'"},
	{"LikeGeneral", "name LIKE 'a_c%f'"},
	{"Complex", "(type = 'order' OR type = 'quote') AND amount BETWEEN 100 AND 1000 AND JMSXDeliveryCount < 3 AND missing IS NULL"},
}

func benchMessage() *persistence.Message {
	return &persistence.Message{
		Dest: "queue://ORDERS", ID: "ID:host-1:1:1:1", Priority: 7, Timestamp: 1700000000000,
		Headers: persistence.Headers{
			"content-type", "application/json", "type", "order", "region", "EU",
			"amount", "150", "name", "abcdef", "correlation-id", "c-1",
		},
	}
}

// BenchmarkMatch evaluates typical selectors over a stored message, through
// MatchesMessage and through Matches with a reused *Message adapter.
func BenchmarkMatch(b *testing.B) {
	m := benchMessage()
	for _, bs := range benchSelectors {
		sel, err := Parse(bs.sel)
		if err != nil {
			b.Fatal(err)
		}
		if !sel.MatchesMessage(m, 1) {
			b.Fatalf("%s does not match the benchmark message", bs.sel)
		}
		b.Run(bs.name+"/MatchesMessage", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !sel.MatchesMessage(m, 1) {
					b.Fatal("no match")
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
		b.Run(bs.name+"/Matches", func(b *testing.B) {
			b.ReportAllocs()
			adapter := &Message{M: m, DeliveryCount: 1}
			for b.Loop() {
				if !sel.Matches(adapter) {
					b.Fatal("no match")
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, bs := range benchSelectors {
		b.Run(bs.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(bs.sel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMatchDoesNotAllocate pins the zero-allocation promise for the common cases.
func TestMatchDoesNotAllocate(t *testing.T) {
	m := benchMessage()
	adapter := &Message{M: m, DeliveryCount: 1}
	typed := typedOnly{adapter}
	for _, bs := range append(benchSelectors, struct{ name, sel string }{"Arith", "amount * 2 + 1.5 > 100 AND -amount < 0 AND amount % 7 = 3"}) {
		sel, err := Parse(bs.sel)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { sel.MatchesMessage(m, 1) }); n != 0 {
			t.Errorf("%s: MatchesMessage allocates %v times", bs.name, n)
		}
		if n := testing.AllocsPerRun(100, func() { sel.Matches(adapter) }); n != 0 {
			t.Errorf("%s: Matches(*Message) allocates %v times", bs.name, n)
		}
		if n := testing.AllocsPerRun(100, func() { sel.Matches(typed) }); n != 0 {
			t.Errorf("%s: Matches(TypedProperties) allocates %v times", bs.name, n)
		}
	}
}

package setting

import "strings"

// Suggest returns the candidate closest to name, ignoring case, if it is close enough
// to be what was meant (a typo: at most a third of name's letters, and at least one,
// edited away), and "" otherwise. Ties go to the first candidate.
func Suggest(name string, candidates []string) string {
	n := strings.ToLower(name)
	limit := max(1, len(n)/3)
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := distance(n, strings.ToLower(c), bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b (bytes), or some value >= bound once
// it is known to reach bound.
func distance(a, b string, bound int) int {
	if abs(len(a)-len(b)) >= bound {
		return bound
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= bound {
			return bound
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

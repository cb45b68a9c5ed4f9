package policy

import "strings"

// Match reports whether name matches an ActiveMQ wildcard pattern: elements are
// separated by '.', '*' matches exactly one element, '>' matches one or more trailing
// elements.
func Match(pattern, name string) bool {
	for {
		pel, prest, pmore := strings.Cut(pattern, ".")
		if pel == ">" {
			return name != ""
		}
		nel, nrest, nmore := strings.Cut(name, ".")
		if name == "" {
			return false
		}
		if pel != "*" && pel != nel {
			return false
		}
		if !pmore || !nmore {
			return !pmore && !nmore
		}
		pattern, name = prest, nrest
	}
}

// CheckPattern says what is wrong with a queue: or topic: pattern, "" for nothing.
func CheckPattern(pattern string) string {
	if strings.TrimSpace(pattern) == "" {
		return `must not be empty (quote a lone ">": unquoted, YAML reads > as the start of a folded block)`
	}
	for _, prefix := range []string{"/queue/", "/topic/", "/temp-queue/", "/temp-topic/"} {
		if strings.HasPrefix(pattern, prefix) {
			return "a STOMP destination; write the destination's name without " + prefix
		}
	}
	elems := strings.Split(pattern, ".")
	for i, el := range elems {
		if strings.Contains(el, ">") && (el != ">" || i != len(elems)-1) {
			return `">" may only be the whole last element`
		}
	}
	return ""
}

// Select is the policy of the destination called name, a topic or a queue,
// temporary or not, among entries: of those whose pattern matches, the most specific
// (literal elements beat *, which beats >), the earlier of equally specific ones. A
// temporary destination takes the first tempQueue or tempTopic entry; queue and topic
// patterns never match one (as in ActiveMQ, whose ">" matches no temporary
// destination). A destination no entry matches gets Default.
func Select(entries []Policy, topic, temp bool, name string) Policy {
	if temp {
		for _, e := range entries {
			if (topic && e.TempTopic) || (!topic && e.TempQueue) {
				return e
			}
		}
		return Default(topic)
	}
	best, bestScore := -1, -1
	for i, e := range entries {
		pattern := e.Queue
		if topic {
			pattern = e.Topic
		}
		if pattern == "" || !(pattern == name || Match(pattern, name)) {
			continue
		}
		if s := specificity(pattern); s > bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		return Default(topic)
	}
	return entries[best]
}

// specificity ranks a pattern: 3 for each literal element, 1 for each *.
func specificity(pattern string) int {
	score := 0
	for _, el := range strings.Split(pattern, ".") {
		switch el {
		case ">":
		case "*":
			score++
		default:
			score += 3
		}
	}
	return score
}

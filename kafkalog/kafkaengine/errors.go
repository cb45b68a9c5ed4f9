package kafkaengine

import "errors"

var (
	// ErrInvalidOptions is returned by Open for missing or contradictory Options.
	ErrInvalidOptions = errors.New("kafkaengine: invalid options")
	// ErrMemberExists is returned by Join for a member id already in its group here.
	ErrMemberExists = errors.New("kafkaengine: group member already joined")
	// ErrNoAssignment is returned by Join when Kafka gave the member no assignment
	// within the join timeout.
	ErrNoAssignment = errors.New("kafkaengine: group join timed out")
)

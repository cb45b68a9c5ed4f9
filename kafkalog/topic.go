package kafkalog

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// partitionDirName is "<topic>-<partition>".
func partitionDirName(topic string, id int) string { return fmt.Sprintf("%s-%d", topic, id) }

// parsePartitionDirName splits "<topic>-<partition>" at the last dash.
func parsePartitionDirName(name string) (string, int, bool) {
	dash := strings.LastIndexByte(name, '-')
	if dash <= 0 {
		return "", 0, false
	}
	id, err := strconv.Atoi(name[dash+1:])
	if err != nil || id < 0 || strconv.Itoa(id) != name[dash+1:] || !streamlog.ValidTopicName(name[:dash]) {
		return "", 0, false
	}
	return name[:dash], id, true
}

// topic is a named set of partitions.
type topic struct {
	name       string
	partitions []*partition
	// cfg is the topic's own settings, never nil once open; its partitions read it when
	// they enforce retention, and CreateTopicWith replaces it.
	cfg atomic.Pointer[TopicConfig]
}

// partition returns partition id or an error.
func (t *topic) partition(id int) (*partition, error) {
	if id < 0 || id >= len(t.partitions) {
		return nil, fmt.Errorf("%w: %s-%d (topic has %d)", ErrUnknownPartition, t.name, id, len(t.partitions))
	}
	return t.partitions[id], nil
}

// openTopic opens the partitions 0..n-1 of a topic under dir, with its stored config.
func openTopic(o *Options, name string, n int) (*topic, error) {
	c, err := readTopicConfig(o, name)
	if err != nil {
		return nil, err
	}
	t := &topic{name: name}
	t.cfg.Store(&c)
	for id := range n {
		p, err := openPartition(o, name, id, filepath.Join(o.Dir, partitionDirName(name, id)))
		if err != nil {
			t.close()
			return nil, err
		}
		p.topicCfg = &t.cfg
		t.partitions = append(t.partitions, p)
	}
	return t, nil
}

func (t *topic) close() error {
	var first error
	for _, p := range t.partitions {
		if err := p.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

package config

import (
	"math"
	"time"
)

// systemUsageSection is systemUsage as written.
type systemUsageSection struct {
	MemoryUsage                           byteSize      `mapstructure:"memoryUsage"`
	StoreUsage                            byteSize      `mapstructure:"storeUsage"`
	SendFailIfNoSpace                     bool          `mapstructure:"sendFailIfNoSpace"`
	SendFailIfNoSpaceAfterTimeout         time.Duration `mapstructure:"sendFailIfNoSpaceAfterTimeout"`
	MaxTransactionSize                    byteSize      `mapstructure:"maxTransactionSize"`
	MaxTransactionsPerConnection          int64         `mapstructure:"maxTransactionsPerConnection"`
	MaxDestinations                       int64         `mapstructure:"maxDestinations"`
	MaxSubscriptionsPerConnection         int64         `mapstructure:"maxSubscriptionsPerConnection"`
	MaxDurableSubscriptions               int64         `mapstructure:"maxDurableSubscriptions"`
	MaxTemporaryDestinationsPerConnection int64         `mapstructure:"maxTemporaryDestinationsPerConnection"`
	SchedulerMemoryLimit                  byteSize      `mapstructure:"schedulerMemoryLimit"`
}

// buildSystemUsage validates the systemUsage section (defaults are viper's).
func (c *checker) buildSystemUsage(s systemUsageSection) (SystemUsage, *Error) {
	const path = "systemUsage"
	if err := c.sizeAtLeast(joinKey(path, "memoryUsage"), int64(s.MemoryUsage), MinUsageLimit); err != nil {
		return SystemUsage{}, err
	}
	if err := c.sizeAtLeast(joinKey(path, "storeUsage"), int64(s.StoreUsage), MinUsageLimit); err != nil {
		return SystemUsage{}, err
	}
	if err := c.sizeAtLeast(joinKey(path, "maxTransactionSize"), int64(s.MaxTransactionSize), 1<<10); err != nil {
		return SystemUsage{}, err
	}
	if err := c.nonNegative(joinKey(path, "sendFailIfNoSpaceAfterTimeout"), s.SendFailIfNoSpaceAfterTimeout, "no waiting"); err != nil {
		return SystemUsage{}, err
	}
	if err := c.intRange(joinKey(path, "maxTransactionsPerConnection"), s.MaxTransactionsPerConnection, 1, math.MaxInt32, ""); err != nil {
		return SystemUsage{}, err
	}
	if err := c.intRange(joinKey(path, "maxDestinations"), s.MaxDestinations, 1, math.MaxInt32, ""); err != nil {
		return SystemUsage{}, err
	}
	if err := c.intRange(joinKey(path, "maxSubscriptionsPerConnection"), s.MaxSubscriptionsPerConnection, 1, math.MaxInt32, ""); err != nil {
		return SystemUsage{}, err
	}
	if err := c.intRange(joinKey(path, "maxDurableSubscriptions"), s.MaxDurableSubscriptions, 1, math.MaxInt32, ""); err != nil {
		return SystemUsage{}, err
	}
	if err := c.intRange(joinKey(path, "maxTemporaryDestinationsPerConnection"), s.MaxTemporaryDestinationsPerConnection, 1, math.MaxInt32, ""); err != nil {
		return SystemUsage{}, err
	}
	if err := c.sizeAtLeast(joinKey(path, "schedulerMemoryLimit"), int64(s.SchedulerMemoryLimit), MinSchedulerMemoryLimit); err != nil {
		return SystemUsage{}, err
	}
	return SystemUsage{
		MemoryUsage:                           int64(s.MemoryUsage),
		StoreUsage:                            int64(s.StoreUsage),
		SendFailIfNoSpace:                     s.SendFailIfNoSpace,
		SendFailIfNoSpaceAfterTimeout:         s.SendFailIfNoSpaceAfterTimeout,
		MaxTransactionSize:                    int64(s.MaxTransactionSize),
		MaxTransactionsPerConnection:          int(s.MaxTransactionsPerConnection),
		MaxDestinations:                       int(s.MaxDestinations),
		MaxSubscriptionsPerConnection:         int(s.MaxSubscriptionsPerConnection),
		MaxDurableSubscriptions:               int(s.MaxDurableSubscriptions),
		MaxTemporaryDestinationsPerConnection: int(s.MaxTemporaryDestinationsPerConnection),
		SchedulerMemoryLimit:                  int64(s.SchedulerMemoryLimit),
	}, nil
}

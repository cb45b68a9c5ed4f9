package policy

import (
	"reflect"
	"slices"
	"strings"
)

// Attribute is an attribute of an activemq.xml element that is a key of a policy
// entry of the same name and meaning.
type Attribute struct {
	// Name is the attribute's name and the key's last element.
	Name string
	// Size: the value is a size in bytes (Bytes).
	Size bool
}

var bytesType = reflect.TypeOf(Bytes(0))

// Attributes lists, in the order of Policy's fields, the attributes of element
// (policyEntry, redeliveryPolicy, individualDeadLetterStrategy,
// abortSlowConsumerStrategy, ...) that are keys of a policy entry: the fields whose
// activemq tag names element. An importer of activemq.xml copies them as they are.
func Attributes(element string) []Attribute {
	var out []Attribute
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if slices.Contains(strings.Split(f.Tag.Get("activemq"), ","), element) {
				out = append(out, Attribute{Name: f.Tag.Get("mapstructure"), Size: f.Type == bytesType})
			}
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeOf(Policy{}))
	return out
}

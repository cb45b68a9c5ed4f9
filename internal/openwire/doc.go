// Package openwire is the OpenWire wire format of ActiveMQ 5.x clients (version 12, as
// 5.15-5.18 send, and the older versions down to MinVersion): framing, negotiation, tight
// and loose encoding, the marshalling cache, and every command and data structure the
// 5.17 Java client uses in normal operation. It is a leaf: commands in, commands out, no
// broker knowledge.
//
// A frame is a 4-byte big-endian size (unless SizePrefixDisabled was negotiated), the
// data type byte, and the fields. Tight encoding first writes all booleans of the frame
// as a bit stream, then the fields; loose encoding writes them in place. Field orders are
// ActiveMQ's (openwire/v12/*Marshaller.java); see types.go for the data type bytes.
//
// Strings: "" travels as null and null decodes as "". Byte arrays keep the nil/empty
// distinction.
package openwire

package toml

import (
	"bufio"
	"io"
	"reflect"
)

// Encoder encodes a Go to a TOML document.
//
// The mapping between Go values and TOML values should be precisely the same as
// for [Decode].
//
// The toml struct tag can be used to provide the key name; if omitted the
// struct field name will be used. If the "omitempty" option is present the
// following value will be skipped:
//
//   - arrays, slices, maps, and string with len of 0
//   - struct with all zero values
//   - bool false
//
// If omitzero is given all int and float types with a value of 0 will be
// skipped.
type Encoder struct {
	Indent string // string for a single indentation level; default is two spaces.
	hasWritten bool
	w          *bufio.Writer
}

// NewEncoder create a new Encoder.
func NewEncoder(w io.Writer) *Encoder {
	return &Encoder{w: bufio.NewWriter(w), Indent: "  "}
}

// Encode writes a TOML representation of the Go value to the [Encoder]'s writer.
func (enc *Encoder) Encode(v any) error {
	rv := eindirect(reflect.ValueOf(v))
	err := enc.safeEncode(Key([]string{}), rv)
	if err != nil {
		return err
	}
	return enc.w.Flush()
}

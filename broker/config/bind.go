package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
)

// binding ties one configdef key to the Config field tagged with its name.
type binding struct {
	key   *configdef.Key
	field int // index in Config
}

var (
	bindings []*binding              // in field order
	bound    = map[string]*binding{} // by key name
)

var durationType = reflect.TypeOf(time.Duration(0))

func init() {
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, ok := f.Tag.Lookup("key")
		if !ok {
			continue
		}
		k, ok := configdef.Lookup(name, configdef.Broker)
		if !ok || k.Status != configdef.Used {
			panic("broker/config: field " + f.Name + " is bound to " + strconv.Quote(name) + ", not a used broker key")
		}
		if f.Type == durationType && k.Unit == 0 {
			panic("broker/config: duration field " + f.Name + " bound to " + name + ", which has no unit")
		}
		b := &binding{key: k, field: i}
		bindings = append(bindings, b)
		bound[name] = b
	}
}

// set types raw per the key and stores it in the field, rejecting values the field cannot hold.
func (b *binding) set(c *Config, raw string) error {
	v, err := b.key.Parse(raw)
	if err != nil {
		return fromTable(err)
	}
	f := reflect.ValueOf(c).Elem().Field(b.field)
	switch x := v.(type) {
	case int64:
		if f.Type() == durationType {
			unit := b.key.Unit
			if x > int64(math.MaxInt64/unit) || x < int64(math.MinInt64/unit) {
				return invalid(b.key.Name, raw, "too large")
			}
			f.SetInt(int64(time.Duration(x) * unit))
			return nil
		}
		if bits := f.Type().Bits(); bits < b.key.Type.Bits() && f.OverflowInt(x) {
			return invalid(b.key.Name, raw, "out of range for a %d-bit integer", bits)
		}
		f.SetInt(x)
	case []string:
		f.Set(reflect.ValueOf(x))
	default:
		f.Set(reflect.ValueOf(v))
	}
	return nil
}

// value returns the field as the key's typed value (durations in the key's unit) and as the
// operator would write it.
func (b *binding) value(c *Config) (any, string) {
	f := reflect.ValueOf(c).Elem().Field(b.field)
	switch {
	case f.Type() == durationType:
		n := f.Int() / int64(b.key.Unit)
		return n, strconv.FormatInt(n, 10)
	case f.CanInt():
		return f.Int(), strconv.FormatInt(f.Int(), 10)
	case f.Kind() == reflect.Float64:
		return f.Float(), strconv.FormatFloat(f.Float(), 'g', -1, 64)
	case f.Kind() == reflect.Slice:
		l := f.Interface().([]string)
		return l, strings.Join(l, ",")
	default:
		return f.Interface(), fmt.Sprint(f.Interface())
	}
}

// validateBound checks every bound field against its key's validator, in field order.
func (c *Config) validateBound() error {
	for _, b := range bindings {
		v, s := b.value(c)
		if reason := b.key.Check(v); reason != "" {
			return invalid(b.key.Name, s, "%s", reason)
		}
	}
	return nil
}

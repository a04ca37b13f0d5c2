package broker

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlerFunc serves one decoded request; it must complete r exactly once (r.respond),
// now or later from any goroutine.
type handlerFunc func(s *Server, r *request, req kmsg.Request)

type handler struct {
	key      int16
	min, max int16
	fn       handlerFunc
}

var handlers = map[int16]*handler{}

// regKey registers the handler of key for versions min..max; ApiVersions advertises
// exactly the registered keys and ranges. Called from the init of each handler file.
func regKey(key kmsg.Key, min, max int16, fn handlerFunc) {
	if req := kmsg.RequestForKey(int16(key)); req == nil || req.MaxVersion() < max {
		panic("broker: kmsg cannot serve " + kmsg.NameForKey(int16(key)) + " at the registered version") // init-time programming error
	}
	handlers[int16(key)] = &handler{key: int16(key), min: min, max: max, fn: fn}
}

func lookupHandler(key int16) *handler { return handlers[key] }

// advertisedKeys lists the served keys and version ranges, by key.
func advertisedKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(handlers))
	for _, h := range handlers {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = h.key, h.min, h.max
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}

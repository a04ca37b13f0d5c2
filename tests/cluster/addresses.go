package cluster

import "fmt"

// OwnAddress is broker id's own loopback address under Options.OwnAddresses: 127.0.0.(10+id).
// Linux routes all of 127.0.0.0/8 to the loopback interface, so no interface setup is needed;
// ids above 244 do not fit and fall back to 127.0.0.1.
func OwnAddress(id int32) string {
	if id < 0 || id > 244 {
		return "127.0.0.1"
	}
	return fmt.Sprintf("127.0.0.%d", 10+id)
}

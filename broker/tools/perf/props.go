package perf

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducerSettings is a producer configuration given with Kafka producer property names
// (--producer-props k=v ..., --producer.config FILE), mapped onto franz-go options by Opts.
//
// Properties that change what is measured take Kafka 2.4's producer defaults when unset, so a
// command line written for kafka-producer-perf-test.sh means the same here: acks=1,
// enable.idempotence=false, compression.type=none, linger.ms=0,
// max.in.flight.requests.per.connection=5, delivery.timeout.ms=120000. batch.size and
// buffer.memory keep franz-go's defaults (1 MB batches, 50,000 buffered records) unless set:
// franz-go sends one produce request per broker for all its partitions, so Kafka's 16 KB
// batch cap would measure the client's request rate, not the broker.
type ProducerSettings struct {
	BootstrapServers []string
	Acks             int16 // 0, 1 or -1 (all)
	Idempotent       bool
	Linger           time.Duration
	BatchSize        int32 // 0: franz-go's default
	Compression      string
	MaxInFlight      int
	ClientID         string
	RequestTimeout   time.Duration // 0: franz-go's default (10 s)
	DeliveryTimeout  time.Duration
	Retries          int   // -1: unlimited (Kafka 2.4's default, 2147483647)
	BufferMemory     int64 // 0: unlimited bytes (franz-go bounds records instead)
	MetadataMaxAge   time.Duration
	RetryBackoff     time.Duration
	ConnMaxIdle      time.Duration
}

// producerProps lists the supported Kafka producer properties with a short description.
var producerProps = map[string]string{
	"bootstrap.servers":                     "host:port[,host:port...] (required)",
	"acks":                                  "0, 1 or all (-1)",
	"enable.idempotence":                    "true or false",
	"linger.ms":                             "ms a partition waits for more records",
	"batch.size":                            "max bytes of one record batch",
	"compression.type":                      "none, gzip, snappy, lz4 or zstd",
	"max.in.flight.requests.per.connection": "produce requests in flight per broker",
	"client.id":                             "client id sent to the brokers",
	"request.timeout.ms":                    "produce request timeout",
	"delivery.timeout.ms":                   "give up on a record after this long",
	"retries":                               "tries per record batch",
	"buffer.memory":                         "max bytes buffered in the client",
	"metadata.max.age.ms":                   "refresh metadata at least this often",
	"retry.backoff.ms":                      "backoff between retries",
	"connections.max.idle.ms":               "close idle connections after this long",
	"key.serializer":                        "ignored: records are bytes",
	"value.serializer":                      "ignored: records are bytes",
}

// SupportedProducerProps returns the supported producer property names, sorted.
func SupportedProducerProps() []string {
	names := make([]string, 0, len(producerProps))
	for k := range producerProps {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// ParseProps turns "k=v" arguments into a map; a later key wins. Like Kafka's tool, an
// argument without "=" or with an empty key is an error ("Invalid property"); the value may
// contain '=' and ',' (bootstrap.servers=a:1,b:2).
func ParseProps(kvs []string) (map[string]string, error) {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		i := strings.IndexByte(kv, '=')
		if i <= 0 || strings.TrimSpace(kv[:i]) == "" {
			return nil, fmt.Errorf("invalid producer property %q: want name=value", kv)
		}
		out[strings.TrimSpace(kv[:i])] = strings.TrimSpace(kv[i+1:])
	}
	return out, nil
}

// ReadPropsFile reads a Java-style properties file (key=value or key: value lines, '#' and
// '!' comments); continuation lines and escapes are not supported.
func ReadPropsFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readProps(f, path)
}

func readProps(r io.Reader, name string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("%s line %d: want name=value, got %q", name, n, line)
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// NewProducerSettings validates props (Kafka producer property names) and applies Kafka
// 2.4's defaults for what is unset. An unknown property is an error naming it.
func NewProducerSettings(props map[string]string) (ProducerSettings, error) {
	s := ProducerSettings{
		Acks:            1,
		Compression:     "none",
		MaxInFlight:     5,
		ClientID:        "perf-producer-client",
		DeliveryTimeout: 120 * time.Second,
		Retries:         -1,
	}
	// Deterministic order: the first bad property reported is the same on every run.
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	acksSet, idemSet := false, false
	for _, k := range names {
		v := props[k]
		if _, ok := producerProps[k]; !ok {
			return s, fmt.Errorf("unknown producer property %q (supported: %s)", k, strings.Join(SupportedProducerProps(), ", "))
		}
		bad := func(want string) error {
			return fmt.Errorf("invalid value %q for producer property %s: want %s", v, k, want)
		}
		switch k {
		case "bootstrap.servers":
			for _, a := range strings.Split(v, ",") {
				if a = strings.TrimSpace(a); a != "" {
					s.BootstrapServers = append(s.BootstrapServers, a)
				}
			}
			if len(s.BootstrapServers) == 0 {
				return s, bad("host:port[,host:port...]")
			}
		case "acks":
			switch strings.ToLower(v) {
			case "0":
				s.Acks = 0
			case "1":
				s.Acks = 1
			case "all", "-1":
				s.Acks = -1
			default:
				return s, bad("0, 1, all or -1")
			}
			acksSet = true
		case "enable.idempotence":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return s, bad("true or false")
			}
			s.Idempotent, idemSet = b, true
		case "linger.ms":
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 0 || ms > 60000 {
				return s, bad("0..60000")
			}
			s.Linger = time.Duration(ms) * time.Millisecond
		case "batch.size":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n <= 0 {
				return s, bad("a positive number of bytes")
			}
			s.BatchSize = int32(n)
		case "compression.type":
			switch strings.ToLower(v) {
			case "none", "gzip", "snappy", "lz4", "zstd":
				s.Compression = strings.ToLower(v)
			default:
				return s, bad("none, gzip, snappy, lz4 or zstd")
			}
		case "max.in.flight.requests.per.connection":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return s, bad("a positive number")
			}
			s.MaxInFlight = n
		case "client.id":
			s.ClientID = v
		case "request.timeout.ms", "delivery.timeout.ms", "metadata.max.age.ms", "retry.backoff.ms", "connections.max.idle.ms":
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 0 || (ms == 0 && k != "retry.backoff.ms") {
				return s, bad("a positive number of milliseconds")
			}
			d := time.Duration(ms) * time.Millisecond
			switch k {
			case "request.timeout.ms":
				s.RequestTimeout = d
			case "delivery.timeout.ms":
				s.DeliveryTimeout = d
			case "metadata.max.age.ms":
				s.MetadataMaxAge = d
			case "retry.backoff.ms":
				s.RetryBackoff = d
			case "connections.max.idle.ms":
				s.ConnMaxIdle = d
			}
		case "retries":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return s, bad("a number >= 0")
			}
			if n >= 1<<31-1 {
				s.Retries = -1
			} else {
				s.Retries = int(n)
			}
		case "buffer.memory":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return s, bad("a positive number of bytes")
			}
			s.BufferMemory = n
		case "key.serializer", "value.serializer":
			// The tool sends byte arrays, as Kafka's does (it overrides both serializers).
		}
	}
	if len(s.BootstrapServers) == 0 {
		return s, fmt.Errorf("producer property bootstrap.servers is required (--producer-props bootstrap.servers=host:port)")
	}
	// Kafka 2.4: the idempotent producer needs acks=all and at most 5 requests in flight;
	// with enable.idempotence=true and acks unset, acks defaults to all.
	if idemSet && s.Idempotent {
		if !acksSet {
			s.Acks = -1
		}
		if s.Acks != -1 {
			return s, fmt.Errorf("enable.idempotence=true needs acks=all (got acks=%d)", s.Acks)
		}
		if s.MaxInFlight > 5 {
			return s, fmt.Errorf("enable.idempotence=true needs max.in.flight.requests.per.connection <= 5 (got %d)", s.MaxInFlight)
		}
	}
	return s, nil
}

// Opts returns the franz-go options for s.
func (s ProducerSettings) Opts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.BootstrapServers...),
		kgo.ClientID(s.ClientID),
		kgo.ProducerLinger(s.Linger),
		kgo.RecordDeliveryTimeout(s.DeliveryTimeout),
	}
	switch s.Acks {
	case 0:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case 1:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !s.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(s.MaxInFlight))
	}
	switch s.Compression {
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	if s.BatchSize > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(s.BatchSize))
	}
	if s.RequestTimeout > 0 {
		opts = append(opts, kgo.ProduceRequestTimeout(s.RequestTimeout))
	}
	if s.Retries >= 0 {
		opts = append(opts, kgo.RecordRetries(s.Retries))
	}
	if s.BufferMemory > 0 {
		opts = append(opts, kgo.MaxBufferedBytes(int(s.BufferMemory)))
	}
	if s.MetadataMaxAge > 0 {
		opts = append(opts, kgo.MetadataMaxAge(s.MetadataMaxAge))
	}
	if s.RetryBackoff > 0 {
		b := s.RetryBackoff
		opts = append(opts, kgo.RetryBackoffFn(func(int) time.Duration { return b }))
	}
	if s.ConnMaxIdle > 0 {
		opts = append(opts, kgo.ConnIdleTimeout(s.ConnMaxIdle))
	}
	return opts
}

package broker

import (
	"errors"
	"sort"
	"strconv"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// DescribeConfigs: v0-4 (v4 flexible; Kafka 2.4 serves v0-2, v3 adds config_type and
// documentation, both filled).
//
// Behavior (AdminManager.describeConfigs; rules restated in docs/kafka-facts.md §11):
//   - TOPIC: every Kafka 2.4.1 topic key (LogConfig), with the topic's value: its
//     /config/topics override (source DYNAMIC_TOPIC_CONFIG), else what the broker config
//     gives it (the source of the first broker synonym: DYNAMIC_BROKER_CONFIG,
//     DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG). read_only false.
//     An invalid name → INVALID_TOPIC_EXCEPTION; a topic the metadata cache does not know →
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER named with this broker's id: every broker key with its current value, source
//     and KIP-226 read_only; the empty name: the cluster-default dynamic configs
//     (/config/brokers/<default>). Another id or a name that is no integer → INVALID_REQUEST.
//     Passwords are sensitive, without value.
//   - include_synonyms (v1+) lists the synonyms in precedence order; config_names null
//     describes every key, else the named ones that exist.
//   - v0 reports is_default = (source is DEFAULT_CONFIG).
//
// Deviations: BROKER_LOGGER (isrbroker has no log4j loggers) → INVALID_REQUEST. Dynamic
// values are read from ZooKeeper at each request rather than from the broker's applied state.

func init() { regKey(kmsg.DescribeConfigs, 0, 4, handleDescribeConfigs) }

// ConfigAdmin is the ZooKeeper side of DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs (Deps.Configs); zkcoord/admin's Reader and Admin implement it
// together.
type ConfigAdmin interface {
	// TopicConfig is /config/topics/<t> (empty when absent); zkcoord.ErrUnknownTopic when
	// the topic does not exist.
	TopicConfig(topic string) (map[string]string, error)
	// BrokerEntityConfig is /config/brokers/<entity> (entity: an id or "<default>").
	BrokerEntityConfig(entity string) (map[string]string, error)
	AlterTopicConfig(topic string, edit func(map[string]string)) error
	AlterBrokerConfig(entity string, edit func(map[string]string)) error
}

// errNoConfigAdmin answers when the server runs without a ZooKeeper coordinator (unit tests).
var errNoConfigAdmin = errors.New("broker: no config admin")

func (s *Server) configAdmin() (ConfigAdmin, error) {
	ca := s.deps.Configs
	if ca == nil {
		return nil, errNoConfigAdmin
	}
	return ca, nil
}

func handleDescribeConfigs(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	if !s.goHandler(r.log(), func() { r.respond(describeConfigs(s, r, req)) }) {
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, res := range req.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, kerr.RequestTimedOut.Code
			resp.Resources = append(resp.Resources, rr)
		}
		r.respond(resp)
	}
}

// resourceError is a per-resource error with Kafka's message.
type resourceError struct {
	code int16
	msg  string
}

func (e *resourceError) Error() string { return e.msg }

func invalidRequest(msg string) *resourceError {
	return &resourceError{code: kerr.InvalidRequest.Code, msg: msg}
}

// brokerResource checks a BROKER resource name: "" is the cluster default (entity
// "<default>"), else it must be this broker's id (AdminManager.getBrokerId).
func (s *Server) brokerResource(name string) (entity string, perBroker bool, err *resourceError) {
	if name == "" {
		return zkdata.DefaultBrokerEntity, false, nil
	}
	id, perr := strconv.ParseInt(name, 10, 32)
	if perr != nil {
		return "", false, invalidRequest("Broker id must be an integer, but it is: " + name)
	}
	if int32(id) != s.cfg.BrokerID {
		return "", false, invalidRequest("Unexpected broker id, expected " + strconv.Itoa(int(s.cfg.BrokerID)) + " or empty string, but received " + name)
	}
	return name, true, nil
}

// sources reads this broker's dynamic configs next to its static ones.
func (s *Server) configSources(ca ConfigAdmin) (*configSources, error) {
	def, err := ca.BrokerEntityConfig(zkdata.DefaultBrokerEntity)
	if err != nil {
		return nil, err
	}
	own, err := ca.BrokerEntityConfig(strconv.Itoa(int(s.cfg.BrokerID)))
	if err != nil {
		return nil, err
	}
	static := s.cfg.StaticConfig
	if static == nil {
		static = map[string]string{}
	}
	return &configSources{static: static, dynDefault: def, dynBroker: own}, nil
}

func describeConfigs(s *Server, r *request, req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	log := r.log()
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for i := range req.Resources {
		res := &req.Resources[i]
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		err := s.authz.configAuth(r, res.ResourceType, res.ResourceName, acl.OpDescribeConfigs)
		var entries []describedConfig
		if err == nil {
			entries, err = describeResource(s, res)
		}
		if err != nil {
			code, msg := configErrorCode(err)
			rr.ErrorCode, rr.ErrorMessage = code, &msg
			log.WithFields(logrus.Fields{"resourceType": res.ResourceType, "resource": res.ResourceName}).WithError(err).Info("describe configs failed")
		} else {
			rr.Configs = describedToWire(req, entries, res.ConfigNames)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// configErrorCode maps a per-resource error of the config API keys to its Kafka code.
func configErrorCode(err error) (int16, string) {
	var re *resourceError
	if errors.As(err, &re) {
		return re.code, re.msg
	}
	return adminErrorCode(err)
}

func describeResource(s *Server, res *kmsg.DescribeConfigsRequestResource) ([]describedConfig, error) {
	ca, err := s.configAdmin()
	if err != nil {
		return nil, err
	}
	switch res.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if !validTopicName(res.ResourceName) {
			return nil, &resourceError{code: kerr.InvalidTopicException.Code, msg: "invalid topic name " + strconv.Quote(res.ResourceName)}
		}
		if _, ok := s.cache.Snapshot().Topics[res.ResourceName]; !ok {
			return nil, &resourceError{code: kerr.UnknownTopicOrPartition.Code, msg: "unknown topic " + res.ResourceName}
		}
		overrides, err := ca.TopicConfig(res.ResourceName)
		if errors.Is(err, zkcoord.ErrUnknownTopic) {
			return nil, &resourceError{code: kerr.UnknownTopicOrPartition.Code, msg: "unknown topic " + res.ResourceName}
		}
		if err != nil {
			return nil, err
		}
		cs, err := s.configSources(ca)
		if err != nil {
			return nil, err
		}
		return describeTopicConfigs(overrides, cs), nil
	case kmsg.ConfigResourceTypeBroker:
		_, perBroker, rerr := s.brokerResource(res.ResourceName)
		if rerr != nil {
			return nil, rerr
		}
		cs, err := s.configSources(ca)
		if err != nil {
			return nil, err
		}
		return describeBrokerConfigs(cs, perBroker), nil
	}
	return nil, invalidRequest("Unsupported resource type: " + res.ResourceType.String())
}

// describedToWire filters by config_names (nil: all) and renders the entries for the version.
func describedToWire(req *kmsg.DescribeConfigsRequest, entries []describedConfig, names []string) []kmsg.DescribeConfigsResponseResourceConfig {
	var want map[string]bool
	if names != nil {
		want = make(map[string]bool, len(names))
		for _, n := range names {
			want[n] = true
		}
	}
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(entries))
	for _, d := range entries {
		if want != nil && !want[d.name] {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly, c.IsSensitive = d.name, d.value, d.readOnly, d.sensitive
		c.Source = d.source
		c.IsDefault = d.source == kmsg.ConfigSourceDefaultConfig
		if req.IncludeSynonyms {
			for _, syn := range d.synonyms {
				ws := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				ws.Name, ws.Value, ws.Source = syn.name, syn.value, syn.source
				c.ConfigSynonyms = append(c.ConfigSynonyms, ws)
			}
		}
		c.ConfigType = configType(d.key)
		if req.IncludeDocumentation && d.key != nil {
			c.Documentation = strPtr(d.key.Doc)
		}
		out = append(out, c)
	}
	return out
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0-3 (v3 flexible).
//
// Behavior:
//   - Answers the keys and version ranges registered by the handler files, min 0 for
//     each as Kafka 2.8 does (librdkafka enables features by range overlap; docs/kafka-facts.md §10).
//   - A request version above 3 (kgo starts at v5) is answered, before its body is read,
//     with a v0-format body: error_code 35 (UNSUPPORTED_VERSION) and the full key list
//     (KIP-511); the connection stays open and the client retries at v3.
//   - The response header is always v0 (no tag byte), even at v3; kproto.AppendResponse
//     knows this.
//
// Deviations: the v3 client software name/version are not validated.

const apiVersionsMax = 3

func init() { regKey(kmsg.ApiVersions, 0, apiVersionsMax, handleApiVersions) }

func handleApiVersions(_ *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = advertisedKeys()
	r.respond(resp)
}

// unsupportedApiVersionsResponse is the v0 answer to an ApiVersions version we do not serve.
func unsupportedApiVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = advertisedKeys()
	return resp
}

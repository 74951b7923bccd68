// The worker protocol's decoders, on any line a worker or a host might send: each line either
// decodes or is refused with a message, and what decodes encodes to a line that decodes to the
// same thing (the run store keeps results in the wire format, so a result must survive the trip).

#include "fuzzcheck.h"
#include "protocol.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

using namespace kforge;

namespace {

template <typename T, typename Decode, typename Encode>
void roundTrips(const std::string& line, const char* what, Decode decode, Encode encode) {
    const spec::Expected<T> first = decode(line);
    if (!first) {
        KFORGE_FUZZ_CHECK(!first.error().empty(), std::string(what) + " refused without a message");
        return;
    }
    const std::string encoded = encode(*first);
    KFORGE_FUZZ_CHECK(encoded.find('\n') == std::string::npos, std::string(what) + " encoded over two lines");
    const spec::Expected<T> second = decode(encoded);
    KFORGE_FUZZ_CHECK(second.ok(), std::string(what) + " does not decode as encoded: "
                                       + (second ? std::string() : second.error()) + "\n" + encoded);
    KFORGE_FUZZ_CHECK(encode(*second) == encoded,
                      std::string(what) + " changes on a second trip:\n" + encoded + "\n" + encode(*second));
}

std::string encodeResponse(const protocol::Response& r) {
    return std::visit(
        [](const auto& v) -> std::string {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, protocol::ErrorResponse>)
                return protocol::encodeError(v.id, v.message);
            else
                return protocol::encode(v);
        },
        r);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string line(reinterpret_cast<const char*>(data), size);
    roundTrips<protocol::Hello>(line, "hello", protocol::decodeHello,
                                [](const protocol::Hello& h) { return protocol::encode(h); });
    roundTrips<protocol::Request>(line, "request", protocol::decodeRequest,
                                  [](const protocol::Request& r) { return protocol::encode(r); });
    roundTrips<protocol::Response>(line, "response", protocol::decodeResponse, encodeResponse);
    roundTrips<protocol::EvaluateResult>(line, "stored result", protocol::decodeEvaluateResult,
                                         [](const protocol::EvaluateResult& r) { return protocol::encode(r); });
    return 0;
}

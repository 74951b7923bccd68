#pragma once
// Where models are served: the built-in presets (resources/llm/endpoints.json: openai, anthropic,
// ollama, vllm, llamacpp), the user's own file that overrides and extends them, and endpoints
// given on the command line.

#include "expected.h"
#include "llm/llmtypes.h"

#include <QList>
#include <QString>

namespace kforge::llm {

// The presets shipped with kforge.
spec::Expected<QList<Endpoint>> builtInEndpoints();
// ~/.config/kforge/llm-endpoints.json (userconfig.h): where the user's file belongs.
QString userEndpointsPath();
// The user's file to read: userEndpointsPath(), else the old ~/.config/kforge/kforge/ one (with a
// warning); near misses are warned about. Empty when there is none.
QString userEndpointsFile();
// One file: {"endpoints": [{"name": ..., "baseUrl": ..., ...}]} (Endpoint::toJson's keys).
// Errors name the file and the entry: "<file>: endpoints[2] (local): maxConcurrent: ...".
spec::Expected<QList<Endpoint>> loadEndpointsFile(const QString& path);
// The presets, then `userFile` when it exists: an entry with a preset's name changes only the keys
// it gives ({"name": "openai", "maxConcurrent": 8}); any other name adds an endpoint.
spec::Expected<QList<Endpoint>> loadEndpoints(const QString& userFile = userEndpointsFile());

// A command-line endpoint: "NAME=URL[,api=openai|anthropic][,key-env=VAR][,keyring=0|1]
// [,key-required=0|1][,concurrency=N][,connect-timeout=S][,timeout=S][,retries=N][,backoff=S]
// [,stream=0|1]". NAME alone (without "=URL") starts from the endpoint of that name in `known`.
// A new endpoint without key-env sends no key; with key-env the variable must be set unless
// key-required=0; keyring=1 also looks in the system keyring. Errors name the part that is wrong.
spec::Expected<Endpoint> parseEndpointSpec(const QString& spec, const QList<Endpoint>& known = {});

// The endpoint called `name`; nullptr when there is none.
const Endpoint* findEndpoint(const QList<Endpoint>& endpoints, const QString& name);

} // namespace kforge::llm

{
  "targets": [
    {
      "target_name": "tidepool_native",
      "sources": ["native/addon.cc", "native/framing.cc", "native/postings.cc", "native/doc-scan.cc", "native/doc-scan-time.cc", "native/doc-indexer.cc", "native/doc-columns.cc", "native/dict-sort.cc", "native/hit-writer.cc", "native/relay.cc", "native/relay-scan-napi.cc", "native/relay-engine.cc", "native/relay-events.cc", "native/relay-stream.cc", "native/relay-lane.cc", "native/relay-state-bind.cc", "native/query-stats-napi.cc", "native/relay-tls.cc", "native/relay-tls-napi.cc", "native/relay-login.cc", "native/relay-auth.cc", "native/relay-auth-crypto.cc", "native/relay-auth-napi.cc", "native/relay-lend.cc", "native/fd-passing.cc"],
      "include_dirs": ["<!@(node -p \"require('node-addon-api').include\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc": ["-O3", "-std=c++17"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"]
    },
    {
      "target_name": "tidepool_malloc",
      "sources": ["native/malloc-tune.cc"],
      "include_dirs": ["<!@(node -p \"require('node-addon-api').include\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc": ["-O2", "-std=c++17"]
    }
  ]
}

{
  "targets": [
    {
      "target_name": "capped_expirationd",
      "sources": [
        "native/engine/expiry/chunk.cc",
        "native/engine/expiry/early_break.cc",
        "native/engine/expiry/full_scan.cc",
        "native/engine/expiry/predicate.cc",
        "native/engine/index.cc",
        "native/engine/index_build.cc",
        "native/engine/index/hash_index.cc",
        "native/engine/index/registry.cc",
        "native/engine/index/tree_index.cc",
        "native/engine/key_def.cc",
        "native/engine/space.cc",
        "native/engine/update.cc",
        "native/napi/addon.cc",
        "native/napi/cursor_object.cc",
        "native/napi/space_object.cc",
        "native/napi/testing.cc"
      ],
      "include_dirs": ["native/engine"],
      "defines": ["NAPI_VERSION=9", "CE_SHARED_LIBRARY"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-O3", "-fvisibility=hidden", "-fvisibility-inlines-hidden", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "MACOSX_DEPLOYMENT_TARGET": "11.0"
      },
      "conditions": [
        ["OS=='linux' and '<!(echo $CE_SANITIZE)'=='1'", {
          "defines": ["CE_TUPLE_MALLOC"],
          "cflags_cc": ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"],
          "ldflags": ["-fsanitize=address,undefined"]
        }]
      ]
    }
  ]
}

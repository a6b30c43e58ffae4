# node-gyp build of the addon (also what prebuildify runs). Sources and settings come from
# sources.json, which CMakeLists.txt reads too, so the two builds cannot drift apart.
{
  "targets": [
    {
      "target_name": "<!(node -p \"require('./sources.json').target\")",
      "sources": ["<!@(node -p \"require('./sources.json').sources.join(' ')\")"],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<!@(node -p \"require('./sources.json').include_dirs.join(' ')\")"
      ],
      "defines": ["<!@(node -p \"require('./sources.json').defines.join(' ')\")"],
      "cflags!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-O3", "-fvisibility=hidden"],
      "conditions": [
        ["OS=='mac'", {
          "sources": ["<!@(node -p \"require('./sources.json').macos_sources.join(' ')\")"],
          # The shaders, embedded in the binary as text (scripts/embed-shaders.mjs), regenerated
          # whenever a file under shaders/ changes.
          "actions": [{
            "action_name": "embed_shaders",
            "inputs": ["scripts/embed-shaders.mjs", "<!@(node scripts/embed-shaders.mjs --list)"],
            "outputs": ["<(SHARED_INTERMEDIATE_DIR)/mto/shaders_embedded.h"],
            "action": ["node", "scripts/embed-shaders.mjs", "<(SHARED_INTERMEDIATE_DIR)/mto/shaders_embedded.h"]
          }, {
            # Precompiled metallibs next to the addon when `xcrun metal` exists (else none:
            # the addon compiles the embedded text at run time).
            "action_name": "build_metallib",
            "inputs": ["scripts/build-metallib.mjs", "scripts/embed-shaders.mjs", "<!@(node scripts/embed-shaders.mjs --list)"],
            "outputs": ["<(PRODUCT_DIR)/mto-metallib/manifest.txt"],
            "action": ["node", "scripts/build-metallib.mjs", "<(PRODUCT_DIR)/mto-metallib"]
          }],
          "include_dirs": ["<(SHARED_INTERMEDIATE_DIR)/mto"],
          "defines": ["MTO_WITH_METAL=1"],
          "link_settings": {
            "libraries": ["<!@(node -p \"require('./sources.json').macos_frameworks.map(f => '-framework ' + f).join(' ')\")"]
          },
          "xcode_settings": {
            "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
            "GCC_ENABLE_CPP_RTTI": "YES",
            "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
            "CLANG_ENABLE_OBJC_ARC": "YES",
            "MACOSX_DEPLOYMENT_TARGET": "<!(node -p \"require('./sources.json').macos_deployment_target\")",
            "OTHER_CPLUSPLUSFLAGS": ["-O3", "-fvisibility=hidden"]
          }
        }],
        # MSVC: C++ exceptions (/EHsc) and RTTI as on Linux and macOS (node's common.gypi turns
        # RTTI off for Release); /utf-8 because the sources are UTF-8 and MSVC would otherwise read
        # them in the system's code page. METAL_TENSOROPS_CLANG_CL=1 (the win32-x64 prebuild) builds
        # with Visual Studio's ClangCL toolset ("C++ Clang tools for Windows"), which compiles the
        # AVX2 / AVX-512 kernels and their run-time dispatch; MSVC's own compiler builds only the
        # portable kernels (core/portable.h). test/native-cpu.test.ts runs both sets under wine.
        ["OS=='win'", {
          "conditions": [
            ["<!(node -p \"process.env.METAL_TENSOROPS_CLANG_CL === '1' ? 1 : 0\")==1", {
              "msbuild_toolset": "ClangCL"
            }]
          ],
          "msvs_settings": {
            "VCCLCompilerTool": {
              "ExceptionHandling": 1,
              "RuntimeTypeInfo": "true",
              "AdditionalOptions": ["/std:c++17", "/O2", "/utf-8"]
            }
          }
        }]
      ]
    }
  ]
}

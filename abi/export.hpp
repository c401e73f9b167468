// The only place symbols are exported: abi/'s extern "C" entry points.
#pragma once
#define PF_EXPORT extern "C" __attribute__((visibility("default")))

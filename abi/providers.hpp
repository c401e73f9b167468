// Registers every built provider with the core registry exactly once (first API call).
#pragma once

namespace pollfab::abi {
void ensure_providers() noexcept;
}

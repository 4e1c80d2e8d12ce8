// Which registries a workload's image may name, and which registries can be counted on
// (issue 24).
//
// An image is pulled by the provider's engine, from the provider's host and network. A
// reference naming that host or network (localhost:5000/..., 127.0.0.1:..., 10.0.0.5/...,
// the link-local 169.254.169.254 of cloud metadata) would make the engine connect there
// for the customer, and its errors tell what listens: such references are refused when a
// container is validated (ValidateContainer in workloads.h), private ones unless the
// operator allows private registries ([fleet] allow_private_registries). Names are not
// resolved here (the provider's resolver decides what a name means there); a name that
// resolves to a private address fails like any unreachable registry, and the customer
// reads the same sentence as for any failed pull (endings.h).
//
// Thread-safety: pure functions over values.
#pragma once

#include <string_view>

namespace gpunex::platform::fleet {

// What an operator allows workload images to name.
struct ImagePolicy {
  // Registries on loopback ("localhost", 127.0.0.0/8) or private addresses (10/8,
  // 172.16/12, 192.168/16, 100.64/10) and internal names (one label, .local, .internal,
  // ...): a registry on the providers' own network, or tests. Link-local, unspecified,
  // multicast and reserved addresses are refused whatever this says.
  bool allow_private_registries = false;
};

enum class RegistryHost {
  kPublic,     // a public name or address (or none written: Docker Hub)
  kPrivate,    // loopback, a private or shared address, an internal name
  kForbidden,  // link-local, unspecified ("this host"), multicast, broadcast, reserved
};

// The kind of the registry host `domain` (ImageRef::domain: "host", "host:port", or ""
// for Docker Hub). Numeric hosts are read as the engine's resolver reads them (inet_aton:
// "127.1", "2130706433", "0x7f.0.0.1" are all 127.0.0.1).
RegistryHost ClassifyRegistryHost(std::string_view domain);

// Whether the registry of `domain` can be counted on to answer: Docker Hub and the large
// public registries (ghcr.io, nvcr.io, quay.io, gcr.io, registry.k8s.io, public.ecr.aws,
// mcr.microsoft.com). Not reaching one of them is the host's network failing; not
// reaching any other registry is the registry's, which the customer chose (and could make
// unreachable at will).
bool IsDependableRegistry(std::string_view domain);

}  // namespace gpunex::platform::fleet

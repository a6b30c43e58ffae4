// The command-path rule (command_path.h).
#include "command_path.h"

namespace mto {

const char* command_path_name(CommandPath p) {
  switch (p) {
    case CommandPath::Metal3: return "metal3";
    case CommandPath::Metal4: return "metal4";
    case CommandPath::Metal4PastCompat: return "metal4-past-compat";
  }
  return "metal3";
}

CommandPath command_path_for(const Capabilities& caps, Tier tier, bool sdk_metal4, bool available26) {
  const bool tensorops = tier == Tier::TensorOps || tier == Tier::TensorOpsMx;
  // caps.metal4_api is checked here too (core/tiers.cc already requires it for these tiers) so a
  // forced path never sends a Metal 4 message the framework does not answer.
  if (!tensorops || !sdk_metal4 || !caps.metal4_api) return CommandPath::Metal3;
  if (available26) return CommandPath::Metal4;
  return caps.os.at_least(26) ? CommandPath::Metal4PastCompat : CommandPath::Metal3;
}

}  // namespace mto

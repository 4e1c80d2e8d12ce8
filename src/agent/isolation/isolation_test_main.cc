// The main of agent_isolation_test. The network isolation check runs the image of the
// program that runs it (self_image.h) as `<program> netprobe ...`: here, this test binary,
// which then acts as `gpunex-agent netprobe` does.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/isolation/netprobe.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "netprobe") {
    return gpunex::agent::isolation::RunNetprobe(std::vector<std::string>(argv + 2, argv + argc),
                                                 std::cout, std::cerr);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

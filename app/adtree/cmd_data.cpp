// adtree data: training datasets (being written: the emoji dataset builder).
#include "commands.h"
#include "util/error.h"

namespace adtree::cli {

int cmd_data(int, char**) { throw Error("'adtree data' is not available yet"); }

}  // namespace adtree::cli

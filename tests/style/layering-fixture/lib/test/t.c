#include "lib/src/p.h"
#include "lib/secret.h"
#include "lib/q_int.h"

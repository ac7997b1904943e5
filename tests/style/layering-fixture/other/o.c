#include "lib/lib.h"
#include "gpool/nobody.h"
#include "proto/gpool.pb-c.h"

/* stepd_main.c: the gstepd executable (gworkerd normally forks the same code without exec). */
#include "worker/stepd/step.h"

int main(int argc, char **argv)
{
	return gp_stepd_main(argc, argv);
}

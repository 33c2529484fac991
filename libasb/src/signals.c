/*
 * signals.c - blocking the stop signals for sigwait() (signals.h).
 */
#include <pthread.h>
#include "asb/signals.h"

void asb_signals_block_stop(sigset_t *set, int extra)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	if (extra > 0)
		sigaddset(set, extra);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	if (extra > 0)
		signal(extra, SIG_DFL);
}

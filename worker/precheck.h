/*
 * precheck: the worker's second command, one precheck script per run.
 */
#ifndef PRECHECK_H
#define PRECHECK_H

/* Reads the input, answers on stdout and exits 0. */
void	 precheck_main(void) __attribute__((noreturn));

#endif /* PRECHECK_H */

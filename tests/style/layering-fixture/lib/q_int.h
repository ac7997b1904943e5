/* q_int.h */

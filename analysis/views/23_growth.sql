-- growth: per thread, the fit total(n) = n*p + m*n(n+1)/2 and where growth accelerated.
CREATE OR REPLACE VIEW growth AS SELECT * FROM t_threads;

-- An in-memory SQL workload for H2 (bench/jvm_workload.sh, WORKLOAD=h2):
-- 50 k rows inserted, indexed, joined, grouped, updated and deleted.
CREATE TABLE customer(id INT PRIMARY KEY, name VARCHAR(40), region INT);
CREATE TABLE orders(id INT PRIMARY KEY, customer INT, amount DECIMAL(12, 2), odate DATE, note VARCHAR(80));
INSERT INTO customer SELECT X, CONCAT('customer ', X), MOD(X, 17) FROM SYSTEM_RANGE(1, 5000);
INSERT INTO orders SELECT X, MOD(X * 7919, 5000) + 1, MOD(X * 104729, 100000) / 100.0,
  DATEADD('DAY', MOD(X, 730), DATE '2024-01-01'), CONCAT('order ', X, ' of ', MOD(X, 97)) FROM SYSTEM_RANGE(1, 50000);
CREATE INDEX orders_customer ON orders(customer);
CREATE INDEX orders_day ON orders(odate);
SELECT c.region, COUNT(*), SUM(o.amount), AVG(o.amount) FROM orders o JOIN customer c ON o.customer = c.id
  GROUP BY c.region ORDER BY c.region;
SELECT YEAR(odate), MONTH(odate), COUNT(*), MAX(amount) FROM orders GROUP BY YEAR(odate), MONTH(odate) ORDER BY 1, 2;
SELECT name, total FROM (SELECT c.name, SUM(o.amount) total FROM customer c JOIN orders o ON o.customer = c.id
  GROUP BY c.name) t ORDER BY total DESC LIMIT 10;
SELECT COUNT(*) FROM orders WHERE note LIKE '%of 4%' AND amount > 500;
UPDATE orders SET amount = amount * 1.1 WHERE MOD(id, 3) = 0;
SELECT COUNT(DISTINCT customer), SUM(amount) FROM orders WHERE odate BETWEEN DATE '2024-03-01' AND DATE '2024-09-30';
DELETE FROM orders WHERE MOD(id, 10) = 0;
SELECT c.region, COUNT(o.id) FROM customer c LEFT JOIN orders o ON o.customer = c.id GROUP BY c.region ORDER BY 2 DESC;
SELECT SUM(amount) FROM orders;

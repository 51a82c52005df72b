/* SQLite benchmark driver: an in-memory database, bulk inserts through
 * prepared statements, indexes, then joins, aggregates, sorts, pattern
 * matches, updates and deletes; every result row is folded into a hash. */
#include "../common.h"
#include "sqlite3.h"

static sqlite3 *db;
static uint64_t h = 14695981039346656037ull;

static void exec(const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "sql error: %s in: %s\n", err ? err : "?", sql);
        exit(4);
    }
}

/* Runs a query, hashes every column of every row, prints the row count. */
static void query(const char *sql) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) bench_fail(sqlite3_errmsg(db));
    long rows = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        rows++;
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const unsigned char *t = sqlite3_column_text(st, c);
            if (t) h = bench_hash(h, t, strlen((const char *)t));
        }
    }
    if (rc != SQLITE_DONE) bench_fail(sqlite3_errmsg(db));
    sqlite3_finalize(st);
    printf("%ld rows: %.60s\n", rows, sql);
}

static void fill(int items, int orders) {
    sqlite3_stmt *st;
    exec("BEGIN");
    if (sqlite3_prepare_v2(db, "INSERT INTO items VALUES (?1, ?2, ?3, ?4, ?5)", -1, &st, NULL))
        bench_fail(sqlite3_errmsg(db));
    for (int i = 0; i < items; i++) {
        char name[32];
        unsigned char w[12];
        bench_text(w, sizeof w - 1);
        w[sizeof w - 1] = 0;
        snprintf(name, sizeof name, "%s-%d", (char *)w, (int)bench_below(1000));
        sqlite3_bind_int(st, 1, i);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 3, (int)bench_below(50));
        sqlite3_bind_double(st, 4, bench_below(100000) / 100.0);
        sqlite3_bind_int(st, 5, (int)bench_below(500));
        if (sqlite3_step(st) != SQLITE_DONE) bench_fail(sqlite3_errmsg(db));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db, "INSERT INTO orders VALUES (NULL, ?1, ?2, ?3, ?4)", -1, &st, NULL))
        bench_fail(sqlite3_errmsg(db));
    for (int i = 0; i < orders; i++) {
        sqlite3_bind_int(st, 1, (int)bench_below((uint32_t)items));
        sqlite3_bind_int(st, 2, (int)bench_below(5000));
        sqlite3_bind_int(st, 3, 1 + (int)bench_below(20));
        sqlite3_bind_int(st, 4, (int)bench_below(365));
        if (sqlite3_step(st) != SQLITE_DONE) bench_fail(sqlite3_errmsg(db));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    exec("COMMIT");
}

int main(int argc, char **argv) {
    int ref = bench_input(argc, argv);
    bench_seed(ref ? 31337 : 11);
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) bench_fail("sqlite3_open");
    /* Sorts for CREATE INDEX spill to temporary files unless told not to. */
    exec("PRAGMA temp_store = MEMORY");
    exec("CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT, cat INT, price REAL, qty INT)");
    exec("CREATE TABLE orders(id INTEGER PRIMARY KEY, item INT, cust INT, amount INT, day INT)");
    fill(ref ? 50000 : 15000, ref ? 300000 : 60000);
    exec("CREATE INDEX orders_item ON orders(item)");
    if (ref) exec("CREATE INDEX items_cat ON items(cat, price)");
    query("SELECT cat, count(*), sum(price), avg(qty) FROM items GROUP BY cat ORDER BY cat");
    query("SELECT i.cat, sum(o.amount * i.price) AS v FROM orders o JOIN items i ON i.id = o.item"
          " GROUP BY i.cat ORDER BY v DESC");
    query("SELECT name, price FROM items WHERE name LIKE '%path%' ORDER BY price DESC LIMIT 50");
    query("SELECT cust, count(*) c FROM orders GROUP BY cust HAVING c > 45 ORDER BY c DESC, cust");
    query("SELECT day, sum(amount) FROM orders WHERE day % 7 = 3 GROUP BY day");
    exec("UPDATE items SET price = price * 1.1 WHERE cat % 3 = 0");
    exec("DELETE FROM orders WHERE amount > 18");
    query("SELECT count(*), sum(amount) FROM orders WHERE item IN"
          " (SELECT id FROM items WHERE price > 500)");
    if (ref) {
        query("SELECT substr(name, 1, 3) p, count(*) FROM items GROUP BY p ORDER BY 2 DESC LIMIT 20");
        query("SELECT o.cust, max(i.price) FROM orders o JOIN items i ON i.id = o.item"
              " WHERE i.cat BETWEEN 10 AND 20 GROUP BY o.cust ORDER BY 2 DESC LIMIT 30");
    } else {
        query("SELECT upper(name) FROM items WHERE qty < 3 ORDER BY name LIMIT 40");
    }
    sqlite3_close(db);
    printf("hash %016llx\n", (unsigned long long)h);
    return 0;
}

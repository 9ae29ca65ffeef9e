import { describe, expect, it } from "vitest";
import { selectedColumns } from "../../../src/db/columns";

describe("selectedColumns", () => {
	it("counts the top-level select list, not commas inside calls, subqueries or quotes", () => {
		expect(selectedColumns('select "users"."uuid", "roles"."uuid" from "users" join "roles" on 1')).toBe(2);
		expect(selectedColumns(`SELECT coalesce(a, b), (SELECT max(x) FROM t), 'a,b' AS "x,y" FROM u`)).toBe(3);
		expect(selectedColumns("select distinct a, b from t where c in (select c from d)")).toBe(2);
	});

	it("counts what RETURNING answers, and knows nothing of * or a statement without columns", () => {
		expect(selectedColumns('insert into "t" ("a", "b") values (?, ?) returning "a", "b", "c"')).toBe(3);
		expect(selectedColumns("select * from t")).toBeUndefined();
		expect(selectedColumns('select "t".* from t')).toBeUndefined();
		expect(selectedColumns('delete from "t" where "a" = ?')).toBeUndefined();
	});
});

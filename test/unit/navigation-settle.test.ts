import { beforeEach, describe, expect, it } from 'vitest';
import { NavigationSettleMachine } from '../../src/telemetry/navigation-settle.ts';

describe('NavigationSettleMachine', () => {
  let settled: number[];
  let machine: NavigationSettleMachine;

  beforeEach(() => {
    settled = [];
    machine = new NavigationSettleMachine((navigation) => settled.push(navigation), 1);
  });

  it('fires as soon as DOMContentLoaded and layout settled have both fired', () => {
    machine.domContentLoaded(1);
    expect(settled).toEqual([]);
    machine.layoutSettled(1);
    expect(settled).toEqual([1]);
  });

  it('fires whichever of the two comes first', () => {
    machine.layoutSettled(1);
    machine.domContentLoaded(1);
    expect(settled).toEqual([1]);
  });

  it('does not fire on DOMContentLoaded alone', () => {
    machine.domContentLoaded(1);
    machine.domContentLoaded(1);
    expect(settled).toEqual([]);
  });

  it('needs both of the same navigation', () => {
    machine.domContentLoaded(1);
    machine.navigate(2);
    machine.layoutSettled(2);
    expect(settled).toEqual([]);
    machine.domContentLoaded(2);
    expect(settled).toEqual([2]);
  });

  it('ignores inputs of another navigation', () => {
    machine.navigate(2);
    machine.domContentLoaded(1);
    machine.layoutSettled(1);
    expect(settled).toEqual([]);
  });

  it('fires once per navigation', () => {
    machine.domContentLoaded(1);
    machine.layoutSettled(1);
    machine.layoutSettled(1);
    machine.domContentLoaded(1);
    expect(settled).toEqual([1]);
  });

  it('fires again after the reset of a new navigation', () => {
    machine.domContentLoaded(1);
    machine.layoutSettled(1);
    machine.navigate(2);
    machine.domContentLoaded(2);
    machine.layoutSettled(2);
    expect(settled).toEqual([1, 2]);
  });
});

// page_navigation_settled (docs/events.md#computed-events) as a pure state machine: fires once per navigation, as soon
// as both page_dom_content_loaded and page_layout_settled of that navigation have fired, in either
// order. Independent of network_idle. Inputs of another navigation are ignored.

export class NavigationSettleMachine {
  private navigation: number;
  private domContentLoadedSeen = false;
  private layoutSettledSeen = false;
  private fired = false;

  constructor(
    private readonly onSettled: (navigation: number) => void,
    navigation = 0,
  ) {
    this.navigation = navigation;
  }

  navigate(navigation: number): void {
    this.navigation = navigation;
    this.domContentLoadedSeen = false;
    this.layoutSettledSeen = false;
    this.fired = false;
  }

  domContentLoaded(navigation: number): void {
    if (navigation !== this.navigation) return;
    this.domContentLoadedSeen = true;
    this.check();
  }

  layoutSettled(navigation: number): void {
    if (navigation !== this.navigation) return;
    this.layoutSettledSeen = true;
    this.check();
  }

  dispose(): void {
    this.fired = true;
  }

  private check(): void {
    if (this.fired || !this.domContentLoadedSeen || !this.layoutSettledSeen) return;
    this.fired = true;
    this.onSettled(this.navigation);
  }
}

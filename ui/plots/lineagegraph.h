#pragma once
// The run's lineage as a graph: every candidate a node, placed by generation (left to right) in its
// island's band, an edge from each parent to its child, coloured by speedup (grey: failed, hollow:
// not evaluated yet; a thick rim: pinned; a cross: vetoed). The wheel zooms, dragging pans,
// Ctrl+0 fits the graph; clicking a node selects it in every view; the arrow keys walk the
// lineage: Left to the parent, Right to a child, Up and Down to the neighbours of the same
// generation. A run larger than kMaxNodes shows the selected candidate's neighbourhood instead
// (its ancestry and its descendants a few generations on), and says so.

#include <QGraphicsView>
#include <QHash>
#include <QPointer>

class QGraphicsEllipseItem;
class QLabel;

namespace kforge::ui {

class CandidateSelection;
class RunData;

namespace plotstyle {
class RefreshTimer;
}

class LineageGraph : public QGraphicsView {
    Q_OBJECT
public:
    LineageGraph(RunData* data, CandidateSelection* selection, QWidget* parent = nullptr);

    static constexpr int kMaxNodes = 5000;
    static constexpr int kNeighbourhoodDepth = 3; // generations of descendants shown beyond the selected one

    int nodeCount() const { return static_cast<int>(m_nodes.size()); }
    int edgeCount() const { return m_edges; }
    bool showsNeighbourhood() const { return m_neighbourhood; }
    QString note() const;
    // Where a candidate's node is, in viewport coordinates after laying out what is pending;
    // (-1, -1) when it has none.
    QPoint nodePosition(qint64 candidate);
    double zoom() const; // the view's scale; 1 when the graph is shown at its drawn size
    void fit();          // the whole graph in view

protected:
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void scrollContentsBy(int dx, int dy) override;

private:
    void refresh();
    void rebuild(const QList<int>& rows);
    QList<int> neighbourhood(qint64 centre) const; // rows
    void updateSelected();
    void placeNote();
    void step(int key);
    qint64 nodeAt(const QPoint& viewportPos) const;

    QPointer<RunData> m_data;
    QPointer<CandidateSelection> m_selection;
    QGraphicsScene* m_scene = nullptr;
    QHash<qint64, QGraphicsEllipseItem*> m_nodes;
    QGraphicsEllipseItem* m_ring = nullptr; // around the selected node
    QLabel* m_noteLabel = nullptr;
    QString m_note;
    double m_colourTop = 4.0; // the speedup at the light end of the nodes' colours
    int m_edges = 0;
    bool m_neighbourhood = false;
    qint64 m_centre = 0;   // the candidate a neighbourhood was drawn around
    bool m_fitted = false; // fit once the first graph is shown; the user's zoom is kept after
    QPoint m_pressPos;
    plotstyle::RefreshTimer* m_refresh = nullptr;
};

} // namespace kforge::ui
